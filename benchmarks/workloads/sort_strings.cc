// C++ library workload: std::sort of n pseudo-random ints, then std::to_string and std::string +=
// per element (the counted libc++'s introsort, integer conversion, string growth and operator new).
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

int main(int argc, char **argv) {
    int n = argc > 1 ? std::atoi(argv[1]) : 1000000;
    std::vector<int> v(static_cast<std::size_t>(n));
    unsigned x = 1;
    for (int i = 0; i < n; i++) {
        x = x * 1103515245u + 12345u;
        v[static_cast<std::size_t>(i)] = static_cast<int>(x >> 8);
    }
    std::sort(v.begin(), v.end());
    std::string s;
    for (int i = 0; i < n; i++) s += std::to_string(v[static_cast<std::size_t>(i)]);
    int sorted = std::is_sorted(v.begin(), v.end());
    std::printf("%d ints, %zu characters, sorted=%d\n", n, s.size(), sorted);
    return s.empty();
}
