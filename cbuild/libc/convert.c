/* <stdlib.h> and <inttypes.h> string-to-integer conversions (C locale). */

static int ib_space(int c) { return c == ' ' || (c >= '\t' && c <= '\r'); }

static int ib_digit(int c, int base) {
    int v = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'z' ? c - 'a' + 10 : c >= 'A' && c <= 'Z' ? c - 'A' + 10 : 99;
    return v < base ? v : -1;
}

/* Parse an integer: its magnitude, clamped to LIMIT with errno ERANGE; *NEG when it had a minus. */
static unsigned long long ib_parse(const char *s, char **end, int base, unsigned long long limit, int *neg) {
    const char *p = s;
    unsigned long long v = 0;
    int any = 0, over = 0;
    *neg = 0;
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
    for (int d; (d = ib_digit(*p, base)) >= 0; p++) {
        any = 1;
        if (over) continue;
        if (v > (limit - (unsigned long long)d) / (unsigned long long)base) {
            over = 1;
            v = limit;
        } else {
            v = v * (unsigned long long)base + (unsigned long long)d;
        }
    }
    if (end) *end = (char *)(any ? p : s);
    if (over) IB_ERRNO = IB_ERANGE;
    return any ? v : 0;
}

long long LIBC(strtoll)(const char *restrict s, char **restrict end, int base) {
    int neg;
    unsigned long long v = ib_parse(s, end, base, (unsigned long long)__LONG_LONG_MAX__ + 1, &neg);
    if (!neg && v > (unsigned long long)__LONG_LONG_MAX__) {
        IB_ERRNO = IB_ERANGE;
        return __LONG_LONG_MAX__;
    }
    return neg ? (long long)(0 - v) : (long long)v;
}

unsigned long long LIBC(strtoull)(const char *restrict s, char **restrict end, int base) {
    int neg;
    unsigned long long v = ib_parse(s, end, base, ~0ull, &neg);
    return neg ? 0 - v : v;
}

long LIBC(strtol)(const char *restrict s, char **restrict end, int base) {
    int neg;
    unsigned long long limit = (unsigned long long)__LONG_MAX__ + 1;
    unsigned long long v = ib_parse(s, end, base, limit, &neg);
    if (!neg && v > (unsigned long long)__LONG_MAX__) {
        IB_ERRNO = IB_ERANGE;
        return __LONG_MAX__;
    }
    return neg ? (long)(0 - v) : (long)v;
}

unsigned long LIBC(strtoul)(const char *restrict s, char **restrict end, int base) {
    int neg;
    unsigned long long max = (unsigned long)~0ul;
    unsigned long long v = ib_parse(s, end, base, max, &neg);
    return (unsigned long)(neg ? 0 - v : v);
}

intmax_t LIBC(strtoimax)(const char *restrict s, char **restrict end, int base) { return CALL(strtoll)(s, end, base); }
uintmax_t LIBC(strtoumax)(const char *restrict s, char **restrict end, int base) { return CALL(strtoull)(s, end, base); }

int LIBC(atoi)(const char *s) { return (int)CALL(strtol)(s, NULL, 10); }
long LIBC(atol)(const char *s) { return CALL(strtol)(s, NULL, 10); }
long long LIBC(atoll)(const char *s) { return CALL(strtoll)(s, NULL, 10); }
