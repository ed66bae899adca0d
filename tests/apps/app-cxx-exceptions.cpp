// C++ exceptions unwinding through several frames, and backtrace(): both
// belong to the process, and must work the same with the shim preloaded.
#include <dlfcn.h>
#include <execinfo.h>

#include <cstdio>
#include <cstring>
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
	// Which objects the process's unwinder symbols come from: never libunwind.
	for (const char *name : { "_Unwind_RaiseException", "_Unwind_Backtrace", "_Unwind_GetIP",
				  "backtrace" }) {
		Dl_info info{};
		void *p = dlsym(RTLD_DEFAULT, name);
		const char *obj = p && dladdr(p, &info) && info.dli_fname ? info.dli_fname : "none";
		const char *base = std::strrchr(obj, '/');

		std::printf("%s from %s\n", name, base ? base + 1 : obj);
	}
	return caught == 100 ? 0 : 1;
}
