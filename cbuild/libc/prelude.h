/*
 * The counted C library: portable implementations of the C library functions whose
 * work depends on their arguments, compiled to LLVM IR and linked into every
 * instrumented build, where they are counted like the user's own code (see
 * cbuild/build/libc.py). The same code on every host: no CPU dispatch, no host libc.
 *
 * Each function is defined as __instrbudget_libc_<name>; the build points the user's
 * calls to <name> at it. Everything else here is static. Compiled with -fno-builtin,
 * so the loops below stay loops (clang would otherwise turn them back into calls of
 * the host's memcpy and memset).
 */
#include <stddef.h>
#include <stdint.h>

#define LIBC(name) __attribute__((visibility("hidden"))) __instrbudget_libc_##name
#define CALL(name) __instrbudget_libc_##name

typedef uint64_t __attribute__((may_alias, aligned(1))) ib_word_u; /* an unaligned word */
typedef uint64_t __attribute__((may_alias)) ib_word;

/* The host's errno (one per thread, wherever the host keeps it). */
int *__errno_location(void);
#define IB_ERRNO (*__errno_location())
#define IB_ERANGE 34
#define IB_ENOMEM 12
#define IB_EINVAL 22

void *CALL(malloc)(size_t size);
void CALL(free)(void *ptr);
size_t CALL(strlen)(const char *s);
void *CALL(memcpy)(void *restrict dst, const void *restrict src, size_t n);
