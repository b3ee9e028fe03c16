/* Math-heavy workload: n European options priced with Black-Scholes (log, sqrt, exp, erfc), their
 * paths of a discretised geometric Brownian motion driven by Box-Muller normals (log, sqrt, sin,
 * cos) and a power-law payoff (pow); `rounds` times. Arguments: n rounds. Prints the sum, so the
 * work cannot be skipped. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

static unsigned long long state = 88172645463325252ULL;

static double uniform(void) {
    state ^= state << 13;
    state ^= state >> 7;
    state ^= state << 17;
    return ((state >> 11) + 0.5) * 0x1p-53;
}

static double normal_cdf(double x) { return 0.5 * erfc(-x / sqrt(2.0)); }

int main(int argc, char **argv) {
    int n = argc > 1 ? atoi(argv[1]) : 10000, rounds = argc > 2 ? atoi(argv[2]) : 1;
    double total = 0;
    for (int r = 0; r < rounds; r++) {
        for (int i = 0; i < n; i++) {
            double spot = 50 + 100 * uniform(), strike = 50 + 100 * uniform();
            double rate = 0.01 + 0.04 * uniform(), vol = 0.1 + 0.4 * uniform(), t = 0.25 + 2 * uniform();
            double d1 = (log(spot / strike) + (rate + 0.5 * vol * vol) * t) / (vol * sqrt(t));
            double d2 = d1 - vol * sqrt(t);
            double call = spot * normal_cdf(d1) - strike * exp(-rate * t) * normal_cdf(d2);
            double price = spot;
            for (int step = 0; step < 8; step += 2) {
                double u1 = uniform(), u2 = uniform(), radius = sqrt(-2 * log(u1));
                double z1 = radius * cos(2 * M_PI * u2), z2 = radius * sin(2 * M_PI * u2);
                price *= exp((rate - 0.5 * vol * vol) * t / 8 + vol * sqrt(t / 8) * z1);
                price *= exp((rate - 0.5 * vol * vol) * t / 8 + vol * sqrt(t / 8) * z2);
            }
            total += call + pow(fmax(price - strike, 0) + 1, 0.75) * exp(-rate * t);
        }
    }
    printf("%.6f\n", total);
    return 0;
}
