/*
 * hashmap.c - open-addressing hash map from strings to int64_t.
 *
 * Design:
 *   - capacity is always a power of two, so "hash mod capacity" is a mask;
 *   - collisions are resolved with linear probing;
 *   - the table grows (doubles) before the load factor would exceed 3/4;
 *   - keys are hashed with 32-bit FNV-1a over their bytes only, so the
 *     layout (and the work done) never depends on pointer values;
 *   - there is no deletion, so no tombstones are needed.
 */
#include "minikit.h"

#include <stdlib.h>
#include <string.h>

#define FNV32_OFFSET_BASIS 2166136261u
#define FNV32_PRIME        16777619u

#define MAP_MIN_CAPACITY   8u

typedef struct {
    char    *key;   /* owned copy of the key; NULL marks an empty slot */
    uint32_t hash;  /* cached hash of key (saves rehashing on growth)  */
    int64_t  value;
} mk_map_slot;

struct mk_map {
    mk_map_slot *slots;
    size_t       capacity; /* number of slots, a power of two */
    size_t       size;     /* number of occupied slots        */
};

uint32_t mk_fnv1a32(const char *key)
{
    uint32_t h = FNV32_OFFSET_BASIS;
    if (key == NULL) {
        return h;
    }
    for (const unsigned char *p = (const unsigned char *)key; *p != '\0'; p++) {
        h ^= *p;
        h *= FNV32_PRIME;
    }
    return h;
}

/* Does a table of @p capacity slots have room for @p count entries while
 * staying at or below a 3/4 load factor?  Capacities are powers of two
 * >= 8, so capacity / 4 * 3 is exact and cannot overflow.  Since it is
 * always below capacity, a table never becomes completely full. */
static int fits(size_t count, size_t capacity)
{
    return count <= capacity / 4 * 3;
}

/* Smallest power-of-two capacity (>= MAP_MIN_CAPACITY) that can hold
 * @p count entries; 0 if no such size_t value exists. */
static size_t capacity_for(size_t count)
{
    size_t cap = MAP_MIN_CAPACITY;
    while (!fits(count, cap)) {
        if (cap > SIZE_MAX / 2) {
            return 0;
        }
        cap *= 2;
    }
    return cap;
}

/* Find the slot for @p key: either the slot holding it or the empty slot
 * where it would be inserted.  The table always has at least one empty
 * slot, so the probe loop terminates. */
static size_t find_slot(const mk_map_slot *slots, size_t capacity,
                        const char *key, uint32_t hash)
{
    size_t mask = capacity - 1;
    size_t i = (size_t)hash & mask;
    while (slots[i].key != NULL) {
        if (slots[i].hash == hash && strcmp(slots[i].key, key) == 0) {
            break;
        }
        i = (i + 1) & mask;
    }
    return i;
}

/* Move all entries into a new table of @p new_capacity slots. */
static int rehash(mk_map *m, size_t new_capacity)
{
    mk_map_slot *fresh = calloc(new_capacity, sizeof *fresh);
    if (fresh == NULL) {
        return -1;
    }
    for (size_t i = 0; i < m->capacity; i++) {
        if (m->slots[i].key != NULL) {
            size_t j = find_slot(fresh, new_capacity, m->slots[i].key,
                                 m->slots[i].hash);
            fresh[j] = m->slots[i];
        }
    }
    free(m->slots);
    m->slots = fresh;
    m->capacity = new_capacity;
    return 0;
}

/* Portable strdup (strdup is POSIX, not C11). */
static char *copy_string(const char *s)
{
    size_t n = strlen(s) + 1;
    char *copy = malloc(n);
    if (copy != NULL) {
        memcpy(copy, s, n);
    }
    return copy;
}

mk_map *mk_map_new(size_t initial_capacity)
{
    size_t cap = capacity_for(initial_capacity);
    if (cap == 0) {
        return NULL;
    }
    mk_map *m = malloc(sizeof *m);
    if (m == NULL) {
        return NULL;
    }
    m->slots = calloc(cap, sizeof *m->slots);
    if (m->slots == NULL) {
        free(m);
        return NULL;
    }
    m->capacity = cap;
    m->size = 0;
    return m;
}

int mk_map_put(mk_map *m, const char *key, int64_t value)
{
    if (m == NULL || key == NULL) {
        return -1;
    }
    uint32_t hash = mk_fnv1a32(key);
    size_t i = find_slot(m->slots, m->capacity, key, hash);
    if (m->slots[i].key != NULL) {
        m->slots[i].value = value; /* existing key: overwrite */
        return 0;
    }

    /* New key.  Copy it first so a failure leaves the map untouched. */
    char *copy = copy_string(key);
    if (copy == NULL) {
        return -1;
    }
    if (!fits(m->size + 1, m->capacity)) {
        if (m->capacity > SIZE_MAX / 2 || rehash(m, m->capacity * 2) != 0) {
            free(copy);
            return -1;
        }
        i = find_slot(m->slots, m->capacity, key, hash);
    }
    m->slots[i].key = copy;
    m->slots[i].hash = hash;
    m->slots[i].value = value;
    m->size++;
    return 1;
}

int mk_map_get(const mk_map *m, const char *key, int64_t *out)
{
    if (m == NULL || key == NULL) {
        return 0;
    }
    size_t i = find_slot(m->slots, m->capacity, key, mk_fnv1a32(key));
    if (m->slots[i].key == NULL) {
        return 0;
    }
    if (out != NULL) {
        *out = m->slots[i].value;
    }
    return 1;
}

size_t mk_map_size(const mk_map *m)
{
    return m == NULL ? 0 : m->size;
}

int mk_map_iter(const mk_map *m, size_t *cursor, const char **key,
                int64_t *value)
{
    if (m == NULL || cursor == NULL) {
        return 0;
    }
    /* *cursor is the index of the next slot to examine. */
    for (size_t i = *cursor; i < m->capacity; i++) {
        if (m->slots[i].key != NULL) {
            if (key != NULL) {
                *key = m->slots[i].key;
            }
            if (value != NULL) {
                *value = m->slots[i].value;
            }
            *cursor = i + 1;
            return 1;
        }
    }
    *cursor = m->capacity;
    return 0;
}

void mk_map_free(mk_map *m)
{
    if (m == NULL) {
        return;
    }
    for (size_t i = 0; i < m->capacity; i++) {
        free(m->slots[i].key);
    }
    free(m->slots);
    free(m);
}
