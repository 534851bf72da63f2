# ferry: the two commands of a newcomer are `make demo` and `make test`.
# Both install missing Debian packages (scripts/install-deps.sh), then build.
SHELL := /bin/bash
JOBS ?= $(shell nproc)
PRESET ?= release

.PHONY: all deps build demo test test-long test-asan test-tsan fuzz fuzz-proxy-asan format format-check lint tidy thread-safety architecture-names bench package clean

all: build

deps:
	@bash scripts/install-deps.sh

build: deps
	@cmake --preset $(PRESET) >/dev/null
	@cmake --build build/$(PRESET) -j $(JOBS)

demo: build
	@bash scripts/demo.sh build/$(PRESET)/bin/ferry

# Every test: the release build (unit, integration, CLI, fuzz-corpus replay), then the unit
# tests under AddressSanitizer+UBSan and the concurrency tests under ThreadSanitizer.
test: build
	@ctest --test-dir build/$(PRESET) --output-on-failure -j $(JOBS) -LE long
	@$(MAKE) --no-print-directory test-asan test-tsan

test-asan: deps
	@cmake --preset asan-ubsan >/dev/null
	@cmake --build build/asan-ubsan -j $(JOBS) --target unit_tests
	@ctest --test-dir build/asan-ubsan --output-on-failure -j $(JOBS) -L unit

test-tsan: deps
	@cmake --preset tsan >/dev/null
	@cmake --build build/tsan -j $(JOBS) --target concurrency_tests
	@ctest --test-dir build/tsan --output-on-failure -j $(JOBS) -L concurrency --no-tests=ignore

# Long runs: multi-GB files, soak tests, long fuzzing.
test-long: build
	@ctest --test-dir build/$(PRESET) --output-on-failure -L long

# The site proxy's session fuzzer with ferry's code under AddressSanitizer+UBSan: the proxy
# library in xrootd (the ASan runtime preloaded first) and the supervisor; the corpus replay,
# then the long run (tests/proxy/test_session_fuzz.py). An ASan report aborts xrootd, which the
# run reports; reports are also written to build/asan-ubsan/asan-proxy.*.
fuzz-proxy-asan: build
	@cmake --preset asan-ubsan >/dev/null
	@cmake --build build/asan-ubsan -j $(JOBS) --target ferry XrdFerryProxy ferry_xrd_guard ferry_tb_bindshim
	@for mode in replay long; do \
	  FERRY_TB_PRELOAD_FIRST=$$(gcc -print-file-name=libasan.so) \
	  ASAN_OPTIONS=detect_leaks=0:abort_on_error=1:log_path=$(CURDIR)/build/asan-ubsan/asan-proxy \
	  FERRY_TB_BINDSHIM=$(CURDIR)/build/asan-ubsan/lib/libferry_tb_bindshim.so \
	  FERRY_XRD_PATCHED_LIB=$(CURDIR)/build/$(PRESET)/lib/xrootd \
	  /usr/bin/python3 tests/proxy/test_session_fuzz.py build/asan-ubsan/bin/ferry $$mode \
	  || exit 1; done

fuzz: deps
	@cmake --preset fuzz >/dev/null
	@cmake --build build/fuzz -j $(JOBS)
	@bash scripts/fuzz.sh build/fuzz

bench: build
	@bash scripts/bench.sh build/$(PRESET)

# A Debian package of the release build (build/release/package/ferry_<version>_<arch>.deb).
package: build
	@cd build/$(PRESET) && cpack -G DEB >/dev/null && ls package/*.deb

format:
	@git ls-files '*.cc' '*.h' | xargs clang-format -i

format-check:
	@git ls-files '*.cc' '*.h' | xargs clang-format --dry-run -Werror

# Static checks beyond the compiler's: clang-tidy on every source (.clang-tidy; a clean result
# is cached per preprocessed source, so a re-run checks only what changed) and clang's
# thread-safety analysis on the sources that use base/mutex.h. Only CMake's configure is needed.
lint: tidy thread-safety architecture-names

architecture-names:
	@python3 scripts/lint/architecture_names.py .

tidy: deps
	@cmake --preset $(PRESET) >/dev/null
	@python3 scripts/lint/tidy.py build/$(PRESET) -j $(JOBS)

thread-safety: deps
	@cmake --preset $(PRESET) >/dev/null
	@python3 scripts/lint/thread_safety.py build/$(PRESET) -j $(JOBS)

clean:
	rm -rf build
