/*
 * minikit.h - public interface of "minikit", a tiny C11 utility library.
 *
 * minikit bundles a handful of small, self-contained building blocks:
 *
 *   - a JSON tokenizer/validator            (src/json.c)
 *   - a string -> int64 open-addressing map (src/hashmap.c)
 *   - an introsort for int32 arrays + PRNG  (src/sort.c)
 *   - a byte ring buffer                    (src/ringbuf.c)
 *
 * All functions are deterministic: given the same inputs they execute the
 * same sequence of operations (no dependence on pointer values, time, or
 * global random state).  This makes the library a good subject for
 * instruction-count budgets in tests.
 *
 * Public signatures only use int32_t, int64_t, uint32_t, size_t, int and
 * pointers; opaque handle types (mk_map, mk_ring) are only ever passed by
 * pointer.
 */
#ifndef MINIKIT_H
#define MINIKIT_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------------------ */
/* JSON                                                                     */
/* ------------------------------------------------------------------------ */

/** Maximum nesting depth of arrays/objects accepted by the JSON functions.
 *  Documents nested deeper than this are rejected as errors. */
#define MK_JSON_MAX_DEPTH 64

/**
 * Validate a JSON document and count its tokens.
 *
 * The input is the @p len bytes at @p text (it need not be NUL-terminated;
 * an embedded NUL byte is a syntax error).  Exactly one JSON value,
 * optionally surrounded by whitespace, must be present (RFC 8259 grammar).
 *
 * Tokens are: the punctuators `{ } [ ] : ,`, each string, each number and
 * each of the literals `true`, `false`, `null`.  Example: `{"a":[1,2]}` has
 * 9 tokens.
 *
 * @return the number of tokens, or -1 if the input is not valid JSON
 *         (including nesting deeper than MK_JSON_MAX_DEPTH, empty input,
 *         trailing garbage, or @p text == NULL).
 */
int mk_json_count_tokens(const char *text, size_t len);

/**
 * Validate a JSON document and report its maximum nesting depth.
 *
 * A scalar document (e.g. `42`) has depth 0, `[]` has depth 1,
 * `{"a":[1]}` has depth 2.
 *
 * @return the maximum depth, or -1 if the input is not valid JSON
 *         (same rules as mk_json_count_tokens()).
 */
int mk_json_max_depth(const char *text, size_t len);

/* ------------------------------------------------------------------------ */
/* Hash map: NUL-terminated string keys -> int64_t values                   */
/* ------------------------------------------------------------------------ */

/** Opaque hash map handle. */
typedef struct mk_map mk_map;

/**
 * 32-bit FNV-1a hash of a NUL-terminated string.
 * Depends only on the bytes of @p key (never on its address).
 */
uint32_t mk_fnv1a32(const char *key);

/**
 * Create an empty map able to hold at least @p initial_capacity entries
 * before it has to grow.  Passing 0 selects a small default.
 *
 * @return the new map, or NULL if memory allocation failed.
 */
mk_map *mk_map_new(size_t initial_capacity);

/**
 * Insert @p key with @p value, or overwrite the value if @p key is already
 * present.  The map stores its own copy of the key string.  The map grows
 * automatically to keep its load factor at or below 3/4.
 *
 * @return 1 if a new key was inserted, 0 if an existing value was
 *         replaced, -1 on error (NULL argument or out of memory; the map is
 *         left unchanged in that case).
 */
int mk_map_put(mk_map *m, const char *key, int64_t value);

/**
 * Look up @p key.
 *
 * @param out  receives the value when found; may be NULL.
 * @return 1 if the key was found, 0 if not (or if @p m / @p key is NULL).
 */
int mk_map_get(const mk_map *m, const char *key, int64_t *out);

/** Number of keys stored in the map (0 for NULL). */
size_t mk_map_size(const mk_map *m);

/**
 * Iterate over all entries.  Set `*cursor = 0` before the first call; each
 * call that returns 1 stores the next entry's key and value (either output
 * pointer may be NULL).  Returns 0 when there are no more entries.
 *
 * The iteration order depends only on the keys inserted and the order of
 * insertion (it is deterministic), but is otherwise unspecified.  The key
 * pointer stays valid until the map is modified or freed.
 */
int mk_map_iter(const mk_map *m, size_t *cursor, const char **key,
                int64_t *value);

/** Free the map and all key copies.  Accepts NULL. */
void mk_map_free(mk_map *m);

/* ------------------------------------------------------------------------ */
/* Sorting and pseudo-random numbers                                        */
/* ------------------------------------------------------------------------ */

/**
 * Sort @p n integers ascending, in place (introsort: median-of-three
 * quicksort, heapsort fallback on deep recursion, insertion sort for small
 * ranges).  Not stable (irrelevant for plain integers).  Worst case
 * O(n log n).  @p a may be NULL when @p n is 0.
 */
void mk_sort_ints(int32_t *a, size_t n);

/** @return 1 if @p a[0..n) is in non-decreasing order, else 0. */
int mk_is_sorted(const int32_t *a, size_t n);

/**
 * Marsaglia xorshift32 generator: advance @p *state and return the new
 * value.  A zero state would be a fixed point, so a zero @p *state is
 * first replaced by the constant 0x9E3779B9.  Never returns 0.
 */
uint32_t mk_xorshift32(uint32_t *state);

/**
 * Fill @p a[0..n) with pseudo-random values covering the whole int32_t
 * range, generated by mk_xorshift32() started from @p seed.  The same seed
 * always produces the same sequence.
 */
void mk_fill_random(int32_t *a, size_t n, uint32_t seed);

/* ------------------------------------------------------------------------ */
/* Byte ring buffer                                                         */
/* ------------------------------------------------------------------------ */

/** Opaque ring buffer handle. */
typedef struct mk_ring mk_ring;

/**
 * Create a ring buffer holding up to @p capacity bytes.
 * @return the buffer, or NULL if @p capacity is 0 or allocation failed.
 */
mk_ring *mk_ring_new(size_t capacity);

/**
 * Append up to @p n bytes from @p data.  Writes as many bytes as fit
 * (never overwrites unread data).
 * @return the number of bytes actually written (0 if @p r or @p data is
 *         NULL).
 */
size_t mk_ring_write(mk_ring *r, const uint8_t *data, size_t n);

/**
 * Remove up to @p n of the oldest bytes and copy them to @p out.
 * @return the number of bytes actually read (0 if @p r or @p out is NULL).
 */
size_t mk_ring_read(mk_ring *r, uint8_t *out, size_t n);

/** Number of bytes currently stored (0 for NULL). */
size_t mk_ring_used(const mk_ring *r);

/** Total capacity in bytes (0 for NULL). */
size_t mk_ring_capacity(const mk_ring *r);

/** Free the ring buffer.  Accepts NULL. */
void mk_ring_free(mk_ring *r);

#ifdef __cplusplus
}
#endif

#endif /* MINIKIT_H */
