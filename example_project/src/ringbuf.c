/*
 * ringbuf.c - fixed-capacity FIFO byte ring buffer.
 *
 * The buffer keeps a read index (`head`) and a fill count (`used`); the
 * write index is derived from them.  Tracking the count explicitly lets
 * the buffer use all `capacity` bytes (no "one slot empty" convention).
 * Reads and writes copy at most two contiguous chunks with memcpy.
 */
#include "minikit.h"

#include <stdlib.h>
#include <string.h>

struct mk_ring {
    uint8_t *buf;
    size_t   capacity;
    size_t   head;  /* index of the oldest unread byte */
    size_t   used;  /* number of unread bytes          */
};

mk_ring *mk_ring_new(size_t capacity)
{
    if (capacity == 0) {
        return NULL;
    }
    mk_ring *r = malloc(sizeof *r);
    if (r == NULL) {
        return NULL;
    }
    r->buf = malloc(capacity);
    if (r->buf == NULL) {
        free(r);
        return NULL;
    }
    r->capacity = capacity;
    r->head = 0;
    r->used = 0;
    return r;
}

size_t mk_ring_write(mk_ring *r, const uint8_t *data, size_t n)
{
    if (r == NULL || data == NULL) {
        return 0;
    }
    size_t space = r->capacity - r->used;
    if (n > space) {
        n = space;
    }
    if (n == 0) {
        return 0;
    }
    /* Write index; head < capacity and used <= capacity, so computing it
     * as a conditional subtraction avoids overflow of head + used. */
    size_t tail = r->head;
    if (r->used < r->capacity - tail) {
        tail += r->used;
    } else {
        tail = r->used - (r->capacity - tail);
    }
    size_t first = r->capacity - tail; /* contiguous room up to the end */
    if (first > n) {
        first = n;
    }
    memcpy(r->buf + tail, data, first);
    memcpy(r->buf, data + first, n - first); /* wrapped part, may be 0 */
    r->used += n;
    return n;
}

size_t mk_ring_read(mk_ring *r, uint8_t *out, size_t n)
{
    if (r == NULL || out == NULL) {
        return 0;
    }
    if (n > r->used) {
        n = r->used;
    }
    if (n == 0) {
        return 0;
    }
    size_t first = r->capacity - r->head; /* contiguous bytes to the end */
    if (first > n) {
        first = n;
    }
    memcpy(out, r->buf + r->head, first);
    memcpy(out + first, r->buf, n - first);
    /* Advance head by n modulo capacity (n <= capacity). */
    if (n < r->capacity - r->head) {
        r->head += n;
    } else {
        r->head = n - (r->capacity - r->head);
    }
    r->used -= n;
    if (r->used == 0) {
        r->head = 0; /* keep future writes contiguous when empty */
    }
    return n;
}

size_t mk_ring_used(const mk_ring *r)
{
    return r == NULL ? 0 : r->used;
}

size_t mk_ring_capacity(const mk_ring *r)
{
    return r == NULL ? 0 : r->capacity;
}

void mk_ring_free(mk_ring *r)
{
    if (r == NULL) {
        return;
    }
    free(r->buf);
    free(r);
}
