/* <string.h>, <strings.h> and <wchar.h> string functions. The hot ones (strlen, strcmp,
 * memcpy, memset, memcmp, memchr) take 32 bytes at a time as LLVM vectors, which count one
 * instruction per operation like the vector code clang makes of a user's loops, and which
 * every target lowers to what it has; RISC-V builds (whose modelled machines have no vector
 * unit) take a word (8 bytes) at a time instead. The rest go a byte at a time. The work
 * grows with the length either way. */

#define IB_ONES ((uint64_t)0x0101010101010101ull)
#define IB_HIGHS ((uint64_t)0x8080808080808080ull)
/* Nonzero when some byte of X is zero. */
#define IB_HAS_ZERO(x) (((x) - IB_ONES) & ~(x) & IB_HIGHS)

#if defined(__riscv)
#define IB_VECTORS 0
#else
#define IB_VECTORS 1
#define IB_V 32 /* bytes per vector */
#define IB_PAGE 4096
typedef unsigned char ib_vec __attribute__((vector_size(IB_V)));                /* aligned */
typedef unsigned char ib_vec_u __attribute__((vector_size(IB_V), aligned(1))); /* anywhere */
static const ib_vec IB_LANES = {0,  1,  2,  3,  4,  5,  6,  7,  8,  9,  10, 11, 12, 13, 14, 15,
                                16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31};

/* The first lane of M (each lane 0 or 0xff) that is set; IB_V or more when none is. */
static inline size_t ib_first(ib_vec m) { return __builtin_reduce_min((IB_LANES & m) | ~m); }
/* 0xff in the lanes where A and B are equal. */
static inline ib_vec ib_eq(ib_vec a, ib_vec b) { return (ib_vec)(a == b); }
/* Whether reading IB_V bytes at P stays within P's page (and so cannot fault past a terminator). */
static inline int ib_fits_page(const void *p) { return (uintptr_t)p % IB_PAGE <= IB_PAGE - IB_V; }
#endif

void *LIBC(memcpy)(void *restrict dst, const void *restrict src, size_t n) {
    unsigned char *d = (unsigned char *)dst;
    const unsigned char *s = (const unsigned char *)src;
#if IB_VECTORS
    if (n >= IB_V) {
        size_t last = n - IB_V;
        for (; n >= IB_V; n -= IB_V, d += IB_V, s += IB_V) *(ib_vec_u *)d = *(const ib_vec_u *)s;
        /* The rest: the last IB_V bytes, over some already copied. */
        *(ib_vec_u *)((unsigned char *)dst + last) = *(const ib_vec_u *)((const unsigned char *)src + last);
        return dst;
    }
#endif
    for (; n >= 8; n -= 8, d += 8, s += 8) *(ib_word_u *)d = *(const ib_word_u *)s;
    for (; n; n--) *d++ = *s++;
    return dst;
}

void *LIBC(memmove)(void *dst, const void *src, size_t n) {
    unsigned char *d = (unsigned char *)dst;
    const unsigned char *s = (const unsigned char *)src;
    if ((uintptr_t)d - (uintptr_t)s >= n) { /* d before s, or no overlap: copy forwards */
        for (; n >= 8 && (uintptr_t)d - (uintptr_t)s >= 8; n -= 8, d += 8, s += 8) *(ib_word_u *)d = *(const ib_word_u *)s;
        for (; n; n--) *d++ = *s++;
    } else { /* d overlaps the end of s: backwards */
        d += n;
        s += n;
        for (; n >= 8 && (uintptr_t)d - (uintptr_t)s >= 8; n -= 8) {
            d -= 8;
            s -= 8;
            *(ib_word_u *)d = *(const ib_word_u *)s;
        }
        for (; n; n--) *--d = *--s;
    }
    return dst;
}

void *LIBC(memset)(void *dst, int c, size_t n) {
    unsigned char *d = (unsigned char *)dst;
#if IB_VECTORS
    if (n >= IB_V) {
        ib_vec v = (ib_vec){0} + (unsigned char)c;
        size_t last = n - IB_V;
        for (; n >= IB_V; n -= IB_V, d += IB_V) *(ib_vec_u *)d = v;
        *(ib_vec_u *)((unsigned char *)dst + last) = v;
        return dst;
    }
#endif
    uint64_t w = IB_ONES * (unsigned char)c;
    for (; n >= 8; n -= 8, d += 8) *(ib_word_u *)d = w;
    for (; n; n--) *d++ = (unsigned char)c;
    return dst;
}

/* llvm.memset's form: the byte as a byte (cbuild/build/libc.py routes the intrinsic here). */
void *LIBC(memset_byte)(void *dst, unsigned char c, size_t n) { return CALL(memset)(dst, c, n); }

int LIBC(memcmp)(const void *a, const void *b, size_t n) {
    const unsigned char *p = (const unsigned char *)a, *q = (const unsigned char *)b;
#if IB_VECTORS
    for (; n >= IB_V; n -= IB_V, p += IB_V, q += IB_V) {
        ib_vec x = *(const ib_vec_u *)p, y = *(const ib_vec_u *)q;
        if (__builtin_reduce_min(ib_eq(x, y)) == 0) {
            size_t i = ib_first(~ib_eq(x, y));
            return p[i] - q[i];
        }
    }
#endif
    for (; n >= 8 && *(const ib_word_u *)p == *(const ib_word_u *)q; n -= 8, p += 8, q += 8) {}
    for (; n; n--, p++, q++)
        if (*p != *q) return *p - *q;
    return 0;
}

int LIBC(bcmp)(const void *a, const void *b, size_t n) { return CALL(memcmp)(a, b, n); }

void *LIBC(memchr)(const void *src, int c, size_t n) {
    const unsigned char *s = (const unsigned char *)src;
#if IB_VECTORS
    /* Aligned blocks, as strlen reads them: they never cross a page, so reading the rest of the
     * block past a match (where the object may end) cannot fault. The lanes before S are masked. */
    if (n == 0) return NULL;
    ib_vec want = (ib_vec){0} + (unsigned char)c;
    size_t skip = (uintptr_t)s % IB_V, left = n, covered = IB_V - skip; /* S's bytes in the block */
    const ib_vec *b = (const ib_vec *)(s - skip);
    ib_vec found = ib_eq(*b, want) & (ib_vec)(IB_LANES >= (unsigned char)skip);
    while (!__builtin_reduce_max(found)) {
        if (left <= covered) return NULL;
        left -= covered;
        covered = IB_V;
        found = ib_eq(*++b, want);
    }
    const unsigned char *at = (const unsigned char *)b + ib_first(found);
    return (size_t)(at - s) < n ? (void *)at : NULL;
#else
    for (; n; n--, s++)
        if (*s == (unsigned char)c) return (void *)s;
    return NULL;
#endif
}

void *LIBC(memrchr)(const void *src, int c, size_t n) {
    const unsigned char *s = (const unsigned char *)src + n;
    while (n--)
        if (*--s == (unsigned char)c) return (void *)s;
    return NULL;
}

size_t LIBC(strlen)(const char *s) {
#if IB_VECTORS
    /* The aligned block holding S (aligned blocks never cross a page), with the lanes before S
     * made nonzero; then block by block to the first zero byte. */
    size_t skip = (uintptr_t)s % IB_V;
    const ib_vec *b = (const ib_vec *)(s - skip);
    ib_vec v = *b | (ib_vec)(IB_LANES < (unsigned char)skip);
    while (__builtin_reduce_min(v) != 0) v = *++b;
    return (size_t)((const char *)b - s) + ib_first(ib_eq(v, (ib_vec){0}));
#else
    const char *p = s;
    for (; (uintptr_t)p % 8; p++)
        if (!*p) return (size_t)(p - s);
    /* Aligned words never cross a page: reading past the terminator within one is safe. */
    for (; !IB_HAS_ZERO(*(const ib_word *)p); p += 8) {}
    for (; *p; p++) {}
    return (size_t)(p - s);
#endif
}

size_t LIBC(strnlen)(const char *s, size_t n) {
    size_t i = 0;
    for (; i < n && s[i]; i++) {}
    return i;
}

int LIBC(strcmp)(const char *a, const char *b) {
#if IB_VECTORS
    const unsigned char *p = (const unsigned char *)a, *q = (const unsigned char *)b;
    for (;;) {
        if (ib_fits_page(p) & ib_fits_page(q)) {
            ib_vec x = *(const ib_vec_u *)p;
            /* Zero where the strings differ or end. */
            ib_vec same = ib_eq(x, *(const ib_vec_u *)q) & x;
            if (__builtin_reduce_min(same) == 0) {
                size_t i = ib_first(ib_eq(same, (ib_vec){0}));
                return p[i] - q[i];
            }
            p += IB_V;
            q += IB_V;
        } else { /* a byte at a time up to the page boundary */
            if (!*p || *p != *q) return *p - *q;
            p++;
            q++;
        }
    }
#else
    for (; *a && *a == *b; a++, b++) {}
    return (unsigned char)*a - (unsigned char)*b;
#endif
}

int LIBC(strncmp)(const char *a, const char *b, size_t n) {
    if (!n) return 0;
    for (; --n && *a && *a == *b; a++, b++) {}
    return (unsigned char)*a - (unsigned char)*b;
}

/* strcoll in the C locale, the only one a counted program's comparisons may depend on. */
int LIBC(strcoll)(const char *a, const char *b) { return CALL(strcmp)(a, b); }

static int ib_lower(int c) { return c >= 'A' && c <= 'Z' ? c + ('a' - 'A') : c; }

int LIBC(strcasecmp)(const char *a, const char *b) {
    const unsigned char *p = (const unsigned char *)a, *q = (const unsigned char *)b;
    for (; *p && ib_lower(*p) == ib_lower(*q); p++, q++) {}
    return ib_lower(*p) - ib_lower(*q);
}

int LIBC(strncasecmp)(const char *a, const char *b, size_t n) {
    const unsigned char *p = (const unsigned char *)a, *q = (const unsigned char *)b;
    if (!n) return 0;
    for (; --n && *p && ib_lower(*p) == ib_lower(*q); p++, q++) {}
    return ib_lower(*p) - ib_lower(*q);
}

char *LIBC(stpcpy)(char *restrict dst, const char *restrict src) {
    while ((*dst = *src++)) dst++;
    return dst;
}

char *LIBC(strcpy)(char *restrict dst, const char *restrict src) {
    CALL(stpcpy)(dst, src);
    return dst;
}

char *LIBC(stpncpy)(char *restrict dst, const char *restrict src, size_t n) {
    for (; n && *src; n--) *dst++ = *src++;
    char *end = dst;
    for (; n; n--) *dst++ = 0;
    return end;
}

char *LIBC(strncpy)(char *restrict dst, const char *restrict src, size_t n) {
    CALL(stpncpy)(dst, src, n);
    return dst;
}

char *LIBC(strcat)(char *restrict dst, const char *restrict src) {
    CALL(stpcpy)(dst + CALL(strlen)(dst), src);
    return dst;
}

char *LIBC(strncat)(char *restrict dst, const char *restrict src, size_t n) {
    char *d = dst + CALL(strlen)(dst);
    for (; n && *src; n--) *d++ = *src++;
    *d = 0;
    return dst;
}

char *LIBC(strchr)(const char *s, int c) {
    for (;; s++) {
        if (*s == (char)c) return (char *)s;
        if (!*s) return NULL;
    }
}

char *LIBC(strchrnul)(const char *s, int c) {
    for (; *s && *s != (char)c; s++) {}
    return (char *)s;
}

char *LIBC(strrchr)(const char *s, int c) {
    const char *found = NULL;
    for (;; s++) {
        if (*s == (char)c) found = s;
        if (!*s) return (char *)found;
    }
}

/* A 256-bit set of the bytes of SET. */
static void ib_byteset(uint64_t bits[4], const char *set) {
    bits[0] = bits[1] = bits[2] = bits[3] = 0;
    for (const unsigned char *p = (const unsigned char *)set; *p; p++) bits[*p / 64] |= (uint64_t)1 << (*p % 64);
}

#define IB_IN(bits, c) ((bits)[(unsigned char)(c) / 64] >> ((unsigned char)(c) % 64) & 1)

size_t LIBC(strspn)(const char *s, const char *accept) {
    uint64_t bits[4];
    ib_byteset(bits, accept);
    size_t i = 0;
    for (; s[i] && IB_IN(bits, s[i]); i++) {}
    return i;
}

size_t LIBC(strcspn)(const char *s, const char *reject) {
    uint64_t bits[4];
    ib_byteset(bits, reject);
    size_t i = 0;
    for (; s[i] && !IB_IN(bits, s[i]); i++) {}
    return i;
}

char *LIBC(strpbrk)(const char *s, const char *accept) {
    s += CALL(strcspn)(s, accept);
    return *s ? (char *)s : NULL;
}

char *LIBC(strstr)(const char *hay, const char *needle) {
    /* Plain search: worst case |hay| * |needle| comparisons, as many C libraries' simple paths. */
    size_t n = CALL(strlen)(needle);
    if (!n) return (char *)hay;
    for (; *hay; hay++)
        if (*hay == *needle && !CALL(strncmp)(hay, needle, n)) return (char *)hay;
    return NULL;
}

void *LIBC(memmem)(const void *hay, size_t hn, const void *needle, size_t nn) {
    const unsigned char *h = (const unsigned char *)hay;
    if (!nn) return (void *)h;
    for (; hn >= nn; hn--, h++)
        if (!CALL(memcmp)(h, needle, nn)) return (void *)h;
    return NULL;
}

char *LIBC(strtok_r)(char *restrict s, const char *restrict delim, char **restrict save) {
    if (!s) s = *save;
    if (!s) return NULL;
    s += CALL(strspn)(s, delim);
    if (!*s) {
        *save = NULL;
        return NULL;
    }
    char *end = s + CALL(strcspn)(s, delim);
    if (*end) {
        *end = 0;
        *save = end + 1;
    } else {
        *save = NULL;
    }
    return s;
}

char *LIBC(strtok)(char *restrict s, const char *restrict delim) {
    static char *save;
    return CALL(strtok_r)(s, delim, &save);
}

char *LIBC(strdup)(const char *s) {
    size_t n = CALL(strlen)(s) + 1;
    char *d = (char *)CALL(malloc)(n);
    return d ? (char *)CALL(memcpy)(d, s, n) : NULL;
}

char *LIBC(strndup)(const char *s, size_t n) {
    n = CALL(strnlen)(s, n);
    char *d = (char *)CALL(malloc)(n + 1);
    if (!d) return NULL;
    CALL(memcpy)(d, s, n);
    d[n] = 0;
    return d;
}

void LIBC(bzero)(void *dst, size_t n) { CALL(memset)(dst, 0, n); }

void *LIBC(mempcpy)(void *restrict dst, const void *restrict src, size_t n) {
    return (unsigned char *)CALL(memcpy)(dst, src, n) + n;
}

/* Wide strings: wchar_t is 32 bits on the Linux targets. */
typedef int32_t ib_wchar;

size_t LIBC(wcslen)(const ib_wchar *s) {
    const ib_wchar *p = s;
    for (; *p; p++) {}
    return (size_t)(p - s);
}

int LIBC(wcscmp)(const ib_wchar *a, const ib_wchar *b) {
    for (; *a && *a == *b; a++, b++) {}
    return *a < *b ? -1 : *a > *b;
}

int LIBC(wcsncmp)(const ib_wchar *a, const ib_wchar *b, size_t n) {
    for (; n && *a && *a == *b; n--, a++, b++) {}
    return !n ? 0 : *a < *b ? -1 : *a > *b;
}

ib_wchar *LIBC(wcscpy)(ib_wchar *restrict dst, const ib_wchar *restrict src) {
    ib_wchar *d = dst;
    while ((*d++ = *src++)) {}
    return dst;
}

ib_wchar *LIBC(wcschr)(const ib_wchar *s, ib_wchar c) {
    for (;; s++) {
        if (*s == c) return (ib_wchar *)s;
        if (!*s) return NULL;
    }
}

ib_wchar *LIBC(wmemcpy)(ib_wchar *restrict dst, const ib_wchar *restrict src, size_t n) {
    return (ib_wchar *)CALL(memcpy)(dst, src, n * sizeof(ib_wchar));
}

ib_wchar *LIBC(wmemset)(ib_wchar *dst, ib_wchar c, size_t n) {
    for (size_t i = 0; i < n; i++) dst[i] = c;
    return dst;
}
