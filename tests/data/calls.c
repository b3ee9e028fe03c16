/* Calls for profiles: recursion, a function called from several places, and a longjmp
 * that leaves frames without returning. */
#include <setjmp.h>
#include <stdlib.h>

static jmp_buf escape;

__attribute__((noinline)) int leaf(int x) { return x * 3 + 1; }

__attribute__((noinline)) int fib(int n) { return n < 2 ? leaf(n) : fib(n - 1) + fib(n - 2); }

int dive(int n);
static int (*volatile again)(int) = dive; /* a call through a pointer: the recursion stays a recursion */

__attribute__((noinline)) int dive(int n) {
    if (n == 0) longjmp(escape, 1);
    return again(n - 1) + leaf(n);
}

int main(int argc, char **argv) {
    int n = argc > 1 ? atoi(argv[1]) : 10;
    int r = fib(n);
    if (setjmp(escape) == 0) r += dive(5);
    r += leaf(2);
    return r & 1;
}
