/*
 * The counted math.h, double and float.
 *
 * Compiled like the musl sources the ziglang wheel ships (cbuild/build/libc.py lists
 * them), against musl's internal headers. Where the wheel ships musl's C, that is what
 * runs: pow and its exp and log kernels (included below, so that exp and log use the
 * same kernels as pow), the sin/cos/tan kernels and their argument reduction, expm1,
 * atan2, sinh, the error and gamma functions and others (listed in libc.py). The rest
 * is here: the wrappers around those kernels, and the functions whose musl C the wheel
 * does not ship (atan, asin, acos, fmod, cbrt, hypot, cosh, tanh, log1p, log2, log10,
 * exp2, exp10) written with double-double arithmetic, so that every result is within
 * one unit in the last place of the exact one (tests/test_counted_math.py measures
 * that against the host's libm).
 *
 * The float functions compute in double and round once; float results are then
 * the correctly rounded ones but for rare ties. Like musl's, these functions do not
 * set errno; they raise the floating-point exceptions musl's helpers raise.
 * No contraction into fused multiply-adds: the same results on every CPU.
 */
#pragma STDC FP_CONTRACT OFF
#include <math.h>
#include <stdint.h>
#include "libm.h"

/* exp_inline and log_inline: the kernels of musl's (Arm's) pow. */
#include "pow.c"
#undef N
#undef T
#undef C2
#undef C3
#undef C4
#undef C5
#undef C6

/* In one instruction or a few, not calls: this file is compiled with -fno-builtin. */
#define fabs(x) __builtin_fabs(x)
#define copysign(x, y) __builtin_copysign(x, y)

#define LIBC(name) hidden __instrbudget_libc_##name
#define CALL(name) __instrbudget_libc_##name

double CALL(exp)(double);
double CALL(log)(double);
double CALL(expm1)(double); /* musl's expm1.c */
double CALL(atan)(double);
double CALL(atan2)(double, double); /* musl's atan2.c */
double CALL(sin)(double);
double CALL(cos)(double);
double CALL(frexp)(double, int *);
float CALL(sinf)(float);
float CALL(cosf)(float);

#define PIO2_HI 0x1.921fb54442d18p+0
#define PIO2_LO 0x1.1a62633145c07p-54
#define PI_HI 0x1.921fb54442d18p+1
#define PI_LO 0x1.1a62633145c07p-53

/* Double-double arithmetic: a value is hi + lo with |lo| <= ulp(hi) / 2. */

/* s + e == a + b exactly. */
static inline double two_sum(double a, double b, double *e)
{
	double s = a + b;
	double bb = s - a;
	*e = (a - (s - bb)) + (b - bb);
	return s;
}

/* hi + lo == a, each with at most 26 significant bits (|a| < 2^996). */
static inline void split(double a, double *hi, double *lo)
{
	double c = 0x1.0000002p27 * a;
	*hi = c - (c - a);
	*lo = a - *hi;
}

/* p + e == a * b exactly, without a fused multiply-add. */
static inline double two_prod(double a, double b, double *e)
{
	double p = a * b, ah, al, bh, bl;
	split(a, &ah, &al);
	split(b, &bh, &bl);
	*e = ((ah * bh - p) + ah * bl + al * bh) + al * bl;
	return p;
}

/* sqrt(h + l) as a double-double (h > 0). */
static inline double dd_sqrt(double h, double l, double *lo)
{
	double r = __builtin_sqrt(h), e;
	double rr = two_prod(r, r, &e);
	*lo = ((h - rr) - e + l) / (2 * r);
	return r;
}

/* (ah + al) / (bh + bl) as a double-double. */
static inline double dd_div(double ah, double al, double bh, double bl, double *lo)
{
	double q = ah / bh, e;
	double p = two_prod(q, bh, &e);
	*lo = ((ah - p) - e + al - q * bl) / bh;
	return q;
}

/* ---- sin, cos, tan: wrappers of musl's kernels and argument reduction ---- */

double LIBC(sin)(double x)
{
	double y[2];
	uint32_t ix = asuint64(x) >> 32 & 0x7fffffff;
	if (ix <= 0x3fe921fb) { /* |x| <= pi/4 */
		if (ix < 0x3e500000) /* |x| < 2^-26: sin(x) rounds to x */
			return x;
		return __sin(x, 0.0, 0);
	}
	if (ix >= 0x7ff00000) /* inf or nan */
		return x - x;
	switch (__rem_pio2(x, y) & 3) {
	case 0: return __sin(y[0], y[1], 1);
	case 1: return __cos(y[0], y[1]);
	case 2: return -__sin(y[0], y[1], 1);
	default: return -__cos(y[0], y[1]);
	}
}

double LIBC(cos)(double x)
{
	double y[2];
	uint32_t ix = asuint64(x) >> 32 & 0x7fffffff;
	if (ix <= 0x3fe921fb) {
		if (ix < 0x3e46a09e) /* |x| < 2^-27 * sqrt(2): cos(x) rounds to 1 */
			return 1.0;
		return __cos(x, 0.0);
	}
	if (ix >= 0x7ff00000)
		return x - x;
	switch (__rem_pio2(x, y) & 3) {
	case 0: return __cos(y[0], y[1]);
	case 1: return -__sin(y[0], y[1], 1);
	case 2: return -__cos(y[0], y[1]);
	default: return __sin(y[0], y[1], 1);
	}
}

double LIBC(tan)(double x)
{
	double y[2];
	uint32_t ix = asuint64(x) >> 32 & 0x7fffffff;
	if (ix <= 0x3fe921fb) {
		if (ix < 0x3e400000) /* |x| < 2^-27 */
			return x;
		return __tan(x, 0.0, 0);
	}
	if (ix >= 0x7ff00000)
		return x - x;
	int n = __rem_pio2(x, y);
	return __tan(y[0], y[1], n & 1);
}

void LIBC(sincos)(double x, double *s, double *c)
{
	*s = CALL(sin)(x);
	*c = CALL(cos)(x);
}

/* ---- exp, exp2, exp10: musl's exp kernel ---- */

double LIBC(exp)(double x)
{
	uint32_t abstop = top12(x) & 0x7ff;
	if (predict_false(abstop >= top12(1024.0))) {
		if (asuint64(x) == asuint64(-INFINITY))
			return 0.0;
		if (abstop >= top12(INFINITY)) /* inf or nan */
			return 1.0 + x;
	}
	return exp_inline(x, 0.0, 0);
}

/* exp(h + l) for the product x * (ch + cl), |x| below the overflow range. */
static double exp_of_product(double x, double ch, double cl)
{
	if (isnan(x))
		return x + x;
	if (isinf(x))
		return x > 0 ? x : 0.0;
	if (fabs(x) > 0x1p12) /* far past overflow and underflow */
		return exp_inline(x, 0.0, 0);
	double e;
	double h = two_prod(x, ch, &e);
	double l = e + x * cl;
	double s = two_sum(h, l, &e);
	return exp_inline(s, e, 0);
}

double LIBC(exp2)(double x)
{
	return exp_of_product(x, 0x1.62e42fefa39efp-1, 0x1.abc9e3b39803fp-56);
}

double LIBC(exp10)(double x)
{
	return exp_of_product(x, 0x1.26bb1bbb55516p+1, -0x1.f48ad494ea3e9p-53);
}

/* ---- log, log2, log10, log1p: musl's log kernel (relative error ~2^-68) ---- */

/* log(x) as y + *tail for finite x > 0, or x's special value with *tail = 0. */
static double log_dd(double x, double_t *tail)
{
	uint64_t ix = asuint64(x);
	*tail = 0.0;
	if (predict_false(ix - 0x0010000000000000 >= 0x7ff0000000000000 - 0x0010000000000000)) {
		/* x < 0x1p-1022 or inf or nan */
		if (ix * 2 == 0)
			return __math_divzero(1);
		if (ix == asuint64(INFINITY))
			return x;
		if ((ix >> 63) || ix * 2 >= 2 * asuint64(INFINITY))
			return __math_invalid(x);
		/* subnormal: normalise, with the sign bit as the exponent's */
		ix = asuint64(x * 0x1p52);
		ix -= 52ULL << 52;
	}
	return log_inline(ix, tail);
}

double LIBC(log)(double x)
{
	double_t tail;
	return log_dd(x, &tail);
}

/* log(x) * (ch + cl), rounded once. */
static double log_times(double x, double ch, double cl)
{
	double_t tail;
	double e, y = log_dd(x, &tail);
	if (!isfinite(y) || y == 0.0)
		return y * ch;
	double h = two_prod(y, ch, &e);
	return h + (e + y * cl + tail * ch);
}

double LIBC(log2)(double x)
{
	return log_times(x, 0x1.71547652b82fep+0, 0x1.777d0ffda0d24p-56);
}

double LIBC(log10)(double x)
{
	return log_times(x, 0x1.bcb7b1526e50ep-2, 0x1.95355baaafad3p-57);
}

double LIBC(log1p)(double x)
{
	if (isnan(x))
		return x + x;
	if (x <= -1.0)
		return x == -1.0 ? __math_divzero(1) : __math_invalid(x);
	if (fabs(x) < 0x1p-54)
		return x;
	double u = 1.0 + x;
	if (isinf(u))
		return u;
	/* log(1 + x) = log(u) + log(1 + c) with c = (x - (u - 1)) / u, |c| < 2^-53 */
	double c = (x - (u - 1.0)) / u;
	double_t tail;
	double y = log_dd(u, &tail);
	return y + (tail + c);
}

/* ---- atan, asin, acos ---- */

/* atan(j / 16) for j = 4 .. 64, as hi + lo (computed with 200-bit arithmetic). */
static const double atan_table[61][2] = {
	{0x1.f5b75f92c80ddp-3, 0x1.8ab6e3cf7afbdp-57},
	{0x1.362773707ebccp-2, -0x1.963a544b672d8p-57},
	{0x1.6f61941e4def1p-2, -0x1.c63aae6f6e918p-56},
	{0x1.a64eec3cc23fdp-2, -0x1.24dec1b50b7ffp-56},
	{0x1.dac670561bb4fp-2, 0x1.a2b7f222f65e2p-56},
	{0x1.0657e94db30d0p-1, -0x1.d5b495f6349e6p-56},
	{0x1.1e00babdefeb4p-1, -0x1.928df287a668fp-58},
	{0x1.345f01cce37bbp-1, 0x1.1021137c71102p-55},
	{0x1.4978fa3269ee1p-1, 0x1.2419a87f2a458p-56},
	{0x1.5d58987169b18p-1, 0x1.0028e4bc5e7cap-57},
	{0x1.700a7c5784634p-1, -0x1.8c34d25aadef6p-56},
	{0x1.819d0b7158a4dp-1, -0x1.bf76229d3b917p-56},
	{0x1.921fb54442d18p-1, 0x1.1a62633145c07p-55},
	{0x1.a1a25f2c82506p-1, -0x1.8b4c3611182fcp-57},
	{0x1.b034f38649c88p-1, -0x1.be88d6936f833p-55},
	{0x1.bde70ed439fe7p-1, -0x1.a2b56372c05efp-56},
	{0x1.cac7c57846f9ep-1, 0x1.0dae13ad18a6bp-55},
	{0x1.d6e57cf4f0acap-1, -0x1.763b9456ae66ep-55},
	{0x1.e24dd44c855d1p-1, 0x1.f7ac612ab33d8p-55},
	{0x1.ed0d97c9041c9p-1, -0x1.2629e3b5da490p-58},
	{0x1.f730bd281f69bp-1, 0x1.007887af0cbbdp-56},
	{0x1.006132e34d617p+0, 0x1.b343dfa868d93p-54},
	{0x1.04e67277a01d7p+0, 0x1.7115496c13eb6p-57},
	{0x1.092ce471853ccp+0, 0x1.269f9b3e200c2p-55},
	{0x1.0d38f2c5ba09fp+0, -0x1.bd0dc231bfd70p-54},
	{0x1.110eb007f39f7p+0, -0x1.12b2ff85e5500p-54},
	{0x1.14b1dd5f90ce1p+0, -0x1.212d570a63fa2p-56},
	{0x1.1825f074030d9p+0, -0x1.9523f0af0d3b5p-58},
	{0x1.1b6e192ebbe44p+0, 0x1.b1b466a88828ep-54},
	{0x1.1e8d473c5d5cap+0, 0x1.40b5b2505c143p-54},
	{0x1.21862f3fade36p+0, 0x1.4887628d68748p-54},
	{0x1.245b4faf23111p+0, -0x1.bcadba0fe318bp-54},
	{0x1.270ef55a53a25p+0, -0x1.a66b1af5f84fbp-54},
	{0x1.29a33f97bdbeap+0, 0x1.20768f82d028dp-54},
	{0x1.2c1a241d66dc3p+0, 0x1.82b2d58b6a8e9p-54},
	{0x1.2e75728833a54p+0, 0x1.16e3ef7326bdap-56},
	{0x1.30b6d796a4da8p+0, 0x1.6254cb03bb199p-54},
	{0x1.32dfe01c11c21p+0, 0x1.cb1af39d75eb5p-54},
	{0x1.34f1fbb19eb09p+0, 0x1.80d79b4cf61d5p-55},
	{0x1.36ee7f2a24644p+0, -0x1.2c820975621fbp-54},
	{0x1.38d6a6ce13353p+0, -0x1.12c77e8a80f5cp-55},
	{0x1.3aab98641f26bp+0, -0x1.dc349cc175bc7p-55},
	{0x1.3c6e650b38047p+0, 0x1.6b63b358e746dp-54},
	{0x1.3e200aea00d99p+0, -0x1.4794dda3dc8fbp-54},
	{0x1.3fc176b7a8560p+0, -0x1.441a3bd3f1083p-59},
	{0x1.41538521b2f98p+0, 0x1.b0a24edb2ee98p-57},
	{0x1.42d70411f9ec1p+0, 0x1.2b08db7f10896p-55},
	{0x1.444cb3d7d780cp+0, 0x1.84edbdae1963fp-54},
	{0x1.45b54837351a0p+0, 0x1.9e4a72eedacc4p-56},
	{0x1.4711695fedde2p+0, -0x1.369e22089162cp-55},
	{0x1.4861b4cfbe710p+0, -0x1.567d3d25932d1p-57},
	{0x1.49a6be20c3a52p+0, 0x1.61f86cbdae1abp-54},
	{0x1.4ae10fc6589a5p+0, -0x1.3b03e8a27f555p-54},
	{0x1.4c112bb9f7c63p+0, 0x1.f746650006c33p-57},
	{0x1.4d378c1999a0dp+0, -0x1.c857a639541c8p-57},
	{0x1.4e54a3b8e6cf8p+0, -0x1.546673bfb75f0p-55},
	{0x1.4f68dea672617p+0, 0x1.934f9f2b0020ep-54},
	{0x1.5074a2a612ac3p+0, -0x1.70b6f0046b390p-55},
	{0x1.51784fa1544bap+0, -0x1.236e3c857c019p-54},
	{0x1.5274400eea72bp+0, -0x1.c8ca264844338p-54},
	{0x1.5368c951e9cfdp+0, -0x1.96f47948a99f1p-54},
};

/* atan(u) = u + u * z * small(z), z = u * u, |u| < 1/4: the series to u^29. */
static double atan_series(double u, double z, int terms)
{
	double p = 0.0;
	for (int k = terms; k >= 1; k--)
		p = p * z + (k & 1 ? -1.0 : 1.0) / (2 * k + 1);
	return u * z * p;
}

/* atan(uh + ul) for uh >= 0 (uh + ul within double-double of the argument), as
 * hi + *lo. */
static double atan_dd(double uh, double ul, double *lo)
{
	double e;
	if (uh < 0.25) {
		double z = uh * uh;
		*lo = atan_series(uh, z, 14) + ul / (1.0 + z);
		return uh;
	}
	if (uh > 0x1p60) { /* pi/2 - 1/u: the series' next term is below 2^-180 */
		*lo = PIO2_LO - 1.0 / uh;
		return PIO2_HI;
	}
	if (uh > 4.0) { /* pi/2 - atan(1/u) */
		double r = 1.0 / uh;
		double p = two_prod(r, uh, &e);
		double rl = ((1.0 - p) - e - r * ul) / uh;
		double al, ah = atan_dd(r, rl, &al);
		double h = two_sum(PIO2_HI, -ah, &e);
		*lo = e + (PIO2_LO - al);
		return h;
	}
	/* atan(u) = atan(c) + atan(t), c = j / 16 nearest u, t = (u - c) / (1 + c u) */
	int j = (int)(uh * 16.0 + 0.5);
	double c = j * 0.0625;
	double num = uh - c; /* exact */
	double p = two_prod(c, uh, &e);
	double dl, d = two_sum(1.0, p, &dl);
	dl += e + c * ul;
	double tl, t = dd_div(num, ul, d, dl, &tl);
	double h = two_sum(atan_table[j - 4][0], t, &e);
	*lo = e + atan_table[j - 4][1] + tl + atan_series(t, t * t, 6);
	return h;
}

double LIBC(atan)(double x)
{
	if (isnan(x))
		return x + x;
	double a = fabs(x);
	if (isinf(a))
		return copysign(PIO2_HI, x);
	if (a < 0x1p-27)
		return x;
	double lo, hi = atan_dd(a, 0.0, &lo);
	return copysign(hi + lo, x);
}

/* sqrt(1 - a^2) for 0 <= a < 1, as hi + *lo. */
static double cosine_of_asin(double a, double *lo)
{
	double e;
	double s = two_prod(a, a, &e);
	double dl, d = two_sum(1.0, -s, &dl);
	return dd_sqrt(d, dl - e, lo);
}

double LIBC(asin)(double x)
{
	double a = fabs(x);
	if (!(a <= 1.0))
		return isnan(x) ? x + x : __math_invalid(x);
	if (a == 1.0)
		return copysign(PIO2_HI, x);
	if (a < 0x1p-27)
		return x;
	double cl, ch = cosine_of_asin(a, &cl);
	double ul, uh = dd_div(a, 0.0, ch, cl, &ul);
	double lo, hi = atan_dd(uh, ul, &lo);
	return copysign(hi + lo, x);
}

double LIBC(acos)(double x)
{
	double a = fabs(x), e;
	if (!(a <= 1.0))
		return isnan(x) ? x + x : __math_invalid(x);
	if (x == 1.0)
		return 0.0;
	if (x == -1.0)
		return PI_HI;
	if (a < 0x1p-56)
		return PIO2_HI;
	double cl, ch = cosine_of_asin(a, &cl);
	double ul, uh = dd_div(ch, cl, a, 0.0, &ul);
	double lo, hi = atan_dd(uh, ul, &lo);
	if (x > 0)
		return hi + lo;
	double h = two_sum(PI_HI, -hi, &e);
	return h + (e + (PI_LO - lo));
}

/* ---- fmod: exact, by long division of the significands ---- */

double LIBC(fmod)(double x, double y)
{
	uint64_t ux = asuint64(x), uy = asuint64(y);
	int ex = ux >> 52 & 0x7ff, ey = uy >> 52 & 0x7ff;
	uint64_t sign = ux & 0x8000000000000000ULL;
	if (uy << 1 == 0 || isnan(y) || ex == 0x7ff)
		return (x * y) / (x * y);
	if (ux << 1 <= uy << 1)
		return ux << 1 == uy << 1 ? 0.0 * x : x;
	/* significands with the leading bit at bit 52, exponents to match */
	uint64_t mx = ux & 0x000fffffffffffffULL, my = uy & 0x000fffffffffffffULL;
	if (ex)
		mx |= 1ULL << 52;
	else
		for (ex = 1; !(mx >> 52); ex--)
			mx <<= 1;
	if (ey)
		my |= 1ULL << 52;
	else
		for (ey = 1; !(my >> 52); ey--)
			my <<= 1;
	for (; ex > ey; ex--) {
		if (mx >= my)
			mx -= my;
		if (mx == 0)
			return 0.0 * x;
		mx <<= 1;
	}
	if (mx >= my)
		mx -= my;
	if (mx == 0)
		return 0.0 * x;
	for (; !(mx >> 52); ex--)
		mx <<= 1;
	if (ex > 0)
		mx = (mx - (1ULL << 52)) | (uint64_t)ex << 52;
	else
		mx >>= 1 - ex; /* subnormal: exact, the remainder is below y */
	return asdouble(mx | sign);
}

/* ---- cbrt, hypot ---- */

double LIBC(cbrt)(double x)
{
	if (x == 0.0 || !isfinite(x))
		return x + x;
	double a = fabs(x), scale = 1.0;
	if (a < 0x1p-1000) {
		a *= 0x1p162;
		scale = 0x1p-54;
	} else if (a > 0x1p1000) {
		a *= 0x1p-162;
		scale = 0x1p54;
	}
	/* a first guess from the exponent, then Newton's steps on y^3 = a */
	double y = asdouble((uint64_t)((int64_t)(asuint64(a) - (1023ULL << 52)) / 3) + (1023ULL << 52));
	for (int i = 0; i < 5; i++)
		y = y - (y * y * y - a) / (3.0 * y * y);
	/* a last step with y^3 - a in double-double */
	double e1, e2;
	double s = two_prod(y, y, &e1);
	double c = two_prod(s, y, &e2);
	double r = (c - a) + e2 + e1 * y;
	y = y - r / (3.0 * s);
	return copysign(y * scale, x);
}

double LIBC(hypot)(double x, double y)
{
	double a = fabs(x), b = fabs(y), e;
	if (isinf(a) || isinf(b))
		return INFINITY;
	if (isnan(a) || isnan(b))
		return a + b;
	if (a < b) {
		double t = a;
		a = b;
		b = t;
	}
	if (b == 0.0 || a > b * 0x1p60)
		return a + b;
	double scale = 1.0;
	if (a > 0x1p500) {
		a *= 0x1p-600;
		b *= 0x1p-600;
		scale = 0x1p600;
	} else if (b < 0x1p-500) {
		a *= 0x1p600;
		b *= 0x1p600;
		scale = 0x1p-600;
	}
	double ae, be;
	double aa = two_prod(a, a, &ae);
	double bb = two_prod(b, b, &be);
	double sl, s = two_sum(aa, bb, &sl);
	sl += ae + be;
	double h = two_sum(s, sl, &e);
	double lo, r = dd_sqrt(h, e, &lo);
	return (r + lo) * scale;
}

/* ---- cosh, tanh (sinh is musl's) ---- */

double LIBC(cosh)(double x)
{
	double a = fabs(x);
	if (isnan(x))
		return x + x;
	if (a < 0x1p-26)
		return 1.0;
	if (a < 0x1.62e42fefa39efp-1) { /* |x| < log(2): 1 + t^2 / (2 (1 + t)), t = expm1(|x|) */
		double t = CALL(expm1)(a);
		return 1.0 + t * t / (2.0 * (1.0 + t));
	}
	if (a < 22.0) {
		double t = CALL(exp)(a);
		return 0.5 * t + 0.5 / t;
	}
	if (a < 0x1.62e42fefa39efp+9) /* log(DBL_MAX) */
		return 0.5 * CALL(exp)(a);
	return __expo2(a, 1.0);
}

double LIBC(tanh)(double x)
{
	double a = fabs(x), t;
	if (isnan(x))
		return x + x;
	if (a > 22.0)
		return copysign(1.0, x);
	if (a > 0x1.193ea7aad030ap-1) { /* |x| > log(3) / 2 */
		t = CALL(expm1)(2 * a);
		t = 1.0 - 2.0 / (t + 2.0);
	} else if (a > 0x1.c9f25c5bfedd9p-3) { /* |x| > log(5/4) / 2 */
		t = CALL(expm1)(2 * a);
		t = t / (t + 2.0);
	} else if (a >= 0x1p-26) {
		t = CALL(expm1)(-2 * a);
		t = -t / (t + 2.0);
	} else {
		return x;
	}
	return copysign(t, x);
}

/* ---- what the compiler does in one instruction on most targets ---- */

double LIBC(sqrt)(double x) { return __builtin_sqrt(x); }
double LIBC(fabs)(double x) { return __builtin_fabs(x); }
double LIBC(floor)(double x) { return __builtin_floor(x); }
double LIBC(ceil)(double x) { return __builtin_ceil(x); }
double LIBC(trunc)(double x) { return __builtin_trunc(x); }
double LIBC(round)(double x) { return __builtin_round(x); }
double LIBC(rint)(double x) { return __builtin_rint(x); }
double LIBC(copysign)(double x, double y) { return __builtin_copysign(x, y); }
double LIBC(fmin)(double x, double y) { return __builtin_fmin(x, y); }
double LIBC(fmax)(double x, double y) { return __builtin_fmax(x, y); }

double LIBC(frexp)(double x, int *e)
{
	uint64_t ux = asuint64(x);
	int ee = ux >> 52 & 0x7ff;
	if (!ee) {
		if (x == 0.0) {
			*e = 0;
			return x;
		}
		x = CALL(frexp)(x * 0x1p64, e);
		*e -= 64;
		return x;
	}
	if (ee == 0x7ff) {
		*e = 0;
		return x;
	}
	*e = ee - 1022;
	return asdouble((ux & 0x800fffffffffffffULL) | 0x3fe0000000000000ULL);
}

double LIBC(modf)(double x, double *ip)
{
	double i = __builtin_trunc(x);
	*ip = i;
	if (isinf(x))
		return copysign(0.0, x);
	return copysign(x - i, x);
}

/* ---- float: in double, rounded once ---- */

float LIBC(sinf)(float x) { return (float)CALL(sin)((double)x); }
float LIBC(cosf)(float x) { return (float)CALL(cos)((double)x); }
float LIBC(tanf)(float x) { return (float)CALL(tan)((double)x); }
float LIBC(expf)(float x) { return (float)CALL(exp)((double)x); }
float LIBC(exp2f)(float x) { return (float)CALL(exp2)((double)x); }
float LIBC(exp10f)(float x) { return (float)CALL(exp10)((double)x); }
float LIBC(logf)(float x) { return (float)CALL(log)((double)x); }
float LIBC(log2f)(float x) { return (float)CALL(log2)((double)x); }
float LIBC(log10f)(float x) { return (float)CALL(log10)((double)x); }
float LIBC(log1pf)(float x) { return (float)CALL(log1p)((double)x); }
float LIBC(atanf)(float x) { return (float)CALL(atan)((double)x); }
float LIBC(asinf)(float x) { return (float)CALL(asin)((double)x); }
float LIBC(acosf)(float x) { return (float)CALL(acos)((double)x); }
float LIBC(coshf)(float x) { return (float)CALL(cosh)((double)x); }
float LIBC(tanhf)(float x) { return (float)CALL(tanh)((double)x); }
float LIBC(cbrtf)(float x) { return (float)CALL(cbrt)((double)x); }
float LIBC(atan2f)(float x, float y) { return (float)CALL(atan2)((double)x, (double)y); }
float LIBC(hypotf)(float x, float y) { return (float)CALL(hypot)((double)x, (double)y); }
float LIBC(fmodf)(float x, float y) { return (float)CALL(fmod)((double)x, (double)y); }

void LIBC(sincosf)(float x, float *s, float *c)
{
	*s = CALL(sinf)(x);
	*c = CALL(cosf)(x);
}

float LIBC(sqrtf)(float x) { return __builtin_sqrtf(x); }
float LIBC(fabsf)(float x) { return __builtin_fabsf(x); }
float LIBC(floorf)(float x) { return __builtin_floorf(x); }
float LIBC(ceilf)(float x) { return __builtin_ceilf(x); }
float LIBC(truncf)(float x) { return __builtin_truncf(x); }
float LIBC(roundf)(float x) { return __builtin_roundf(x); }
