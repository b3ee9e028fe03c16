/*
 * instrbudget.h: named regions for pytest-instrbudget, from C and C++.
 *
 *     #include <instrbudget.h>
 *
 *     INSTRBUDGET_REGION_START("parse");    // open a region (nested in any open one, up to 64 deep)
 *     parse(input);
 *     INSTRBUDGET_REGION_NEXT("eval");      // close the innermost region, open the next
 *     eval();
 *     INSTRBUDGET_REGION_STOP();            // close the innermost region
 *
 *     {   INSTRBUDGET_REGION_SCOPE("lookup");   // C++: closed at the end of the scope
 *         ...
 *     }
 *
 * Region names are string literals. Every metric of a test is also reported per
 * region (inclusive: the cost from the start marker to the stop marker), and a
 * budget can limit it: @pytest.mark.budget(regions={"parse": 2_000}).
 *
 * The markers add nothing to any metric: in builds of pytest-instrbudget (which
 * define INSTRBUDGET) each marker is an empty inline-assembly statement that
 * touches no memory and no register; the plugin turns it into a call to its
 * runtime after the count of the code around it is fixed, and does not count it.
 * Anywhere else the macros expand to nothing, so the same sources build without
 * the plugin. Define INSTRBUDGET_NO_REGIONS to switch the markers off.
 */
#ifndef INSTRBUDGET_H
#define INSTRBUDGET_H

#if defined(INSTRBUDGET) && !defined(INSTRBUDGET_NO_REGIONS)
#define INSTRBUDGET_MARK_(kind, name) \
    __asm__ __volatile__("# instrbudget-region " kind::"i"(name), "i"(__FILE__), "i"(__LINE__))
#define INSTRBUDGET_REGION_START(name) INSTRBUDGET_MARK_("start", name)
#define INSTRBUDGET_REGION_NEXT(name) INSTRBUDGET_MARK_("next", name)
#define INSTRBUDGET_REGION_STOP() INSTRBUDGET_MARK_("stop", "")
#else
#define INSTRBUDGET_REGION_START(name) ((void)0)
#define INSTRBUDGET_REGION_NEXT(name) ((void)0)
#define INSTRBUDGET_REGION_STOP() ((void)0)
#endif

#ifdef __cplusplus
namespace instrbudget {
/* Closes the region opened by INSTRBUDGET_REGION_SCOPE when the scope ends. */
struct RegionScope {
    RegionScope() = default;
    RegionScope(const RegionScope &) = delete;
    RegionScope &operator=(const RegionScope &) = delete;
    ~RegionScope() { INSTRBUDGET_REGION_STOP(); }
};
}  // namespace instrbudget
#define INSTRBUDGET_CONCAT2_(a, b) a##b
#define INSTRBUDGET_CONCAT_(a, b) INSTRBUDGET_CONCAT2_(a, b)
#define INSTRBUDGET_REGION_SCOPE(name) \
    INSTRBUDGET_REGION_START(name);    \
    ::instrbudget::RegionScope INSTRBUDGET_CONCAT_(instrbudget_region_, __LINE__)
#endif

#endif /* INSTRBUDGET_H */
