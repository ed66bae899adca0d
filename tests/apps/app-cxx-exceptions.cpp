// C++ exceptions unwinding through several frames, and backtrace(): both
// belong to the process, and must work the same with the shim preloaded.
#include <execinfo.h>

#include <cstdio>
#include <stdexcept>
#include <string>

[[gnu::noinline]] static int thrower(int depth)
{
	if (depth == 0)
		throw std::runtime_error("deep " + std::to_string(42));
	return thrower(depth - 1) + 1;
}

int main()
{
	int caught = 0;

	for (int i = 0; i < 100; i++) {
		try {
			thrower(i % 10);
		} catch (const std::exception &e) {
			caught += std::string(e.what()) == "deep 42";
		}
	}
	void *frames[16];
	int n = backtrace(frames, 16);
	std::printf("caught %d of 100; backtrace %s\n", caught, n >= 2 ? "ok" : "short");
	return caught == 100 ? 0 : 1;
}
