/* <stdlib.h> and <inttypes.h> string-to-integer conversions (C locale). */

static int ib_space(int c) { return c == ' ' || (c >= '\t' && c <= '\r'); }

static int ib_digit(int c, int base) {
    int v = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'z' ? c - 'a' + 10 : c >= 'A' && c <= 'Z' ? c - 'A' + 10 : 99;
    return v < base ? v : -1;
}

/* LIMIT / BASE: a constant for the usual bases once ib_parse is inlined into its callers (each
 * has its LIMIT), where a division by a variable is a library call on 32-bit RISC-V. */
static inline __attribute__((always_inline)) unsigned long long ib_cutoff(unsigned long long limit, int base) {
    switch (base) {
    case 10: return limit / 10;
    case 16: return limit / 16;
    case 8: return limit / 8;
    default: return limit / (unsigned long long)base;
    }
}

/* Parse an integer: its magnitude, clamped to LIMIT with errno ERANGE (and *OVER set); *NEG when it
 * had a minus.
 * Whether a digit would pass LIMIT is found without a division per digit: V * BASE + D > LIMIT
 * exactly when V > LIMIT / BASE, or V == LIMIT / BASE and D > LIMIT % BASE. */
static inline __attribute__((always_inline)) unsigned long long ib_parse(const char *s, char **end, int base,
                                                                        unsigned long long limit, int *neg, int *over) {
    const char *p = s;
    unsigned long long v = 0;
    int any = 0;
    *neg = *over = 0;
    if (base < 0 || base == 1 || base > 36) {
        IB_ERRNO = IB_EINVAL;
        if (end) *end = (char *)s;
        return 0;
    }
    while (ib_space(*p)) p++;
    if (*p == '+' || *p == '-') *neg = *p++ == '-';
    if ((base == 0 || base == 16) && p[0] == '0' && (p[1] == 'x' || p[1] == 'X') && ib_digit(p[2], 16) >= 0) {
        p += 2;
        base = 16;
    } else if (base == 0) {
        base = *p == '0' ? 8 : 10;
    }
    unsigned long long cutoff = ib_cutoff(limit, base), cutlim = limit - cutoff * (unsigned long long)base;
    for (int d; (d = ib_digit(*p, base)) >= 0; p++) {
        any = 1;
        if (v >= cutoff && (v > cutoff || (unsigned long long)d > cutlim)) {
            *over = 1;
            v = limit;
            while (ib_digit(*++p, base) >= 0) {} /* the rest of the number */
            break;
        }
        v = v * (unsigned long long)base + (unsigned long long)d;
    }
    if (end) *end = (char *)(any ? p : s);
    if (*over) IB_ERRNO = IB_ERANGE;
    return any ? v : 0;
}

long long LIBC(strtoll)(const char *restrict s, char **restrict end, int base) {
    int neg, over;
    unsigned long long v = ib_parse(s, end, base, (unsigned long long)__LONG_LONG_MAX__ + 1, &neg, &over);
    if (!neg && v > (unsigned long long)__LONG_LONG_MAX__) {
        IB_ERRNO = IB_ERANGE;
        return __LONG_LONG_MAX__;
    }
    return neg ? (long long)(0 - v) : (long long)v;
}

/* An unsigned conversion negates what it read; one too large to read is the maximum, minus or not. */
unsigned long long LIBC(strtoull)(const char *restrict s, char **restrict end, int base) {
    int neg, over;
    unsigned long long v = ib_parse(s, end, base, ~0ull, &neg, &over);
    return over ? ~0ull : neg ? 0 - v : v;
}

long LIBC(strtol)(const char *restrict s, char **restrict end, int base) {
    int neg, over;
    unsigned long long limit = (unsigned long long)__LONG_MAX__ + 1;
    unsigned long long v = ib_parse(s, end, base, limit, &neg, &over);
    if (!neg && v > (unsigned long long)__LONG_MAX__) {
        IB_ERRNO = IB_ERANGE;
        return __LONG_MAX__;
    }
    return neg ? (long)(0 - v) : (long)v;
}

unsigned long LIBC(strtoul)(const char *restrict s, char **restrict end, int base) {
    int neg, over;
    unsigned long long max = (unsigned long)~0ul;
    unsigned long long v = ib_parse(s, end, base, max, &neg, &over);
    return over ? ~0ul : (unsigned long)(neg ? 0 - v : v);
}

intmax_t LIBC(strtoimax)(const char *restrict s, char **restrict end, int base) { return CALL(strtoll)(s, end, base); }
uintmax_t LIBC(strtoumax)(const char *restrict s, char **restrict end, int base) { return CALL(strtoull)(s, end, base); }

int LIBC(atoi)(const char *s) { return (int)CALL(strtol)(s, NULL, 10); }
long LIBC(atol)(const char *s) { return CALL(strtol)(s, NULL, 10); }
long long LIBC(atoll)(const char *s) { return CALL(strtoll)(s, NULL, 10); }
