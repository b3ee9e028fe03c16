/* Touches a controlled set of 1 KiB pages: reads the first R pages of src, writes the first W pages of dst.
 * Both arrays are 1 KiB aligned, so the pages touched do not depend on where the linker puts them. */
#include <stdint.h>
#include <stdlib.h>

#define PAGE 1024
__attribute__((aligned(1024))) static volatile uint8_t src[16 * PAGE];
__attribute__((aligned(1024))) static volatile uint8_t dst[16 * PAGE];

int main(int argc, char **argv) {
    int reads = argc > 1 ? atoi(argv[1]) : 0;
    int writes = argc > 2 ? atoi(argv[2]) : 0;
    unsigned sum = 0;
    for (int p = 0; p < reads; p++) sum += src[p * PAGE + (p * 37) % PAGE];
    for (int p = 0; p < writes; p++) dst[p * PAGE + 5 + p] = (uint8_t)(sum + p);
    return (int)(sum & 1);
}
