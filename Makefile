# ferry: the two commands of a newcomer are `make demo` and `make test`.
# Both install missing Debian packages (scripts/install-deps.sh), then build.
SHELL := /bin/bash
JOBS ?= $(shell nproc)
PRESET ?= release

.PHONY: all deps build demo test test-long test-asan test-tsan fuzz format format-check tidy bench package clean

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

tidy: deps
	@cmake --preset dev >/dev/null
	@git ls-files 'src/*.cc' | grep -v _test | xargs -P $(JOBS) -n 4 clang-tidy -p build/dev --quiet

clean:
	rm -rf build
