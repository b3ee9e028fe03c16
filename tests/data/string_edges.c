/* The counted string functions against byte-at-a-time references, on strings and buffers
 * that end at a page boundary (the next page unmapped), at every alignment; memchr with a
 * length past the page end finds a match before it. Prints each
 * mismatch; exits with the number found (at most 100). */
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

/* volatile: clang would otherwise recognise these loops as the library functions they test */
static size_t ref_strlen(const volatile char *s) {
    size_t n = 0;
    while (s[n]) n++;
    return n;
}
static int ref_sign_strcmp(const volatile unsigned char *a, const volatile unsigned char *b) {
    for (;; a++, b++) {
        if (*a != *b) return *a < *b ? -1 : 1;
        if (!*a) return 0;
    }
}
static int ref_sign_memcmp(const volatile unsigned char *a, const volatile unsigned char *b, size_t n) {
    for (size_t i = 0; i < n; i++)
        if (a[i] != b[i]) return a[i] < b[i] ? -1 : 1;
    return 0;
}
static int sign(int x) { return (x > 0) - (x < 0); }

static int bad;
#define CHECK(cond, ...)                                                                    \
    do {                                                                                    \
        if (!(cond) && bad++ < 100) {                                                       \
            printf(__VA_ARGS__);                                                            \
            printf("\n");                                                                   \
        }                                                                                   \
    } while (0)

int main(void) {
    long page = sysconf(_SC_PAGESIZE);
    unsigned char *two = mmap(NULL, 3 * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (two == MAP_FAILED || mprotect(two + 2 * page, page, PROT_NONE) != 0) return 99;
    unsigned char *end = two + 2 * page; /* the first unmapped byte */
    unsigned char *other = two;          /* another buffer, far from the end */
    for (size_t len = 0; len <= 100; len++) {
        /* a string of len bytes whose terminator is the last mapped byte */
        unsigned char *s = end - len - 1;
        for (size_t i = 0; i < len; i++) s[i] = (unsigned char)('a' + (i * 7 + len) % 26);
        s[len] = 0;
        CHECK(strlen((char *)s) == len, "strlen at end of page, len %zu: %zu", len, strlen((char *)s));
        /* memchr stops at the match, as the standard has it read: a longer n, past the page, is fine */
        CHECK(memchr(s, 0, len + 64) == s + len, "memchr past the page end, len %zu", len);
        CHECK(memchr(s, 0, (size_t)-1) == s + len, "memchr with SIZE_MAX, len %zu", len);
        if (len > 0)
            CHECK(memchr(s + len - 1, s[len - 1], 64) == s + len - 1, "memchr of the last byte, len %zu", len);
        for (size_t off = 0; off < 40; off++) { /* every alignment of the other string */
            unsigned char *t = other + 64 + off;
            memcpy(t, s, len + 1);
            CHECK(strcmp((char *)s, (char *)t) == 0, "strcmp equal len %zu off %zu", len, off);
            CHECK(memcmp(s, t, len) == 0, "memcmp equal len %zu off %zu", len, off);
            for (size_t at = 0; at < len; at += 1 + len / 9) {
                unsigned char keep = t[at];
                t[at] = (unsigned char)(keep + 1 + at % 200);
                CHECK(sign(strcmp((char *)s, (char *)t)) == ref_sign_strcmp(s, t), "strcmp len %zu off %zu at %zu", len,
                      off, at);
                CHECK(sign(strcmp((char *)t, (char *)s)) == ref_sign_strcmp(t, s), "strcmp swapped len %zu at %zu", len,
                      at);
                CHECK(sign(memcmp(s, t, len)) == ref_sign_memcmp(s, t, len), "memcmp len %zu off %zu at %zu", len, off,
                      at);
                CHECK(memchr(t, t[at], len) == t + at || t[at] == 0 || memchr(t, t[at], at) != NULL,
                      "memchr len %zu at %zu", len, at);
                t[at] = keep;
            }
            /* a prefix: the shorter string ends first */
            if (len > 0) {
                t[len - 1] = 0;
                CHECK(sign(strcmp((char *)s, (char *)t)) == ref_sign_strcmp(s, t), "strcmp prefix len %zu off %zu", len,
                      off);
                t[len - 1] = s[len - 1];
            }
            CHECK(ref_strlen((char *)t) == len, "copy of len %zu off %zu", len, off);
        }
        /* memcpy and memset of every length ending at the page boundary */
        unsigned char *d = end - len;
        memset(d, 0x5a, len);
        for (size_t i = 0; i < len; i++) CHECK(d[i] == 0x5a, "memset len %zu at %zu", len, i);
        memcpy(d, other + 3, len);
        CHECK(ref_sign_memcmp(d, other + 3, len) == 0, "memcpy len %zu", len);
        if (len > 0)
            CHECK(memchr(d, 0x100 | d[len - 1], len) == memchr(d, d[len - 1], len), "memchr int argument len %zu", len);
    }
    return bad > 100 ? 100 : bad;
}
