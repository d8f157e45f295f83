// Throws and catches N exceptions: libstdc++'s USDT probes libstdcxx:throw and
// libstdcxx:catch fire N times each. Build: c++ -O1 throw.cc -o throw. Usage: throw N
#include <cstdio>
#include <cstdlib>
#include <stdexcept>

int main(int argc, char **argv)
{
	int n = argc > 1 ? std::atoi(argv[1]) : 10;
	int caught = 0;
	for (int i = 0; i < n; i++) {
		try {
			throw std::runtime_error("x");
		} catch (const std::exception &) {
			caught++;
		}
	}
	std::printf("caught %d\n", caught);
	return 0;
}
