# Thin wrapper around CMake so that the README's commands stay short.
#   make          build (build/)
#   make demo     install what the demo needs, build, run the demo
#   make test     install what the tests need, build (also with ASan/UBSan),
#                 run the whole suite; ends with "N passed, N failed, N skipped"
#   make bench    the side-by-side benchmark (issue 5): installs its peers,
#                 builds, writes bench/results/DATE-HOST.md (BENCH_QUICK=1:
#                 a short run; BENCH_BUILD=DIR: a build of its own); never
#                 part of make test
JOBS ?= $(shell nproc)

.PHONY: all build build-asan deps bench-deps demo test bench clean format

all: build

build:
	cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo $(CMAKE_FLAGS) >/dev/null
	cmake --build build -j $(JOBS)

build-asan:
	cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=Debug -DSOF_SANITIZE=ON $(CMAKE_FLAGS) >/dev/null
	cmake --build build-asan -j $(JOBS)

deps:
	tests/install-deps.sh

demo: deps build
	tests/demo.sh

test: deps
	$(MAKE) build CMAKE_FLAGS=-DSOF_WERROR=ON
	$(MAKE) build-asan CMAKE_FLAGS=-DSOF_WERROR=ON
	tests/run.sh

bench-deps: deps
	bench/install-deps.sh

# BENCH_BUILD=DIR: measure a Release build of its own in DIR, not build/
bench: bench-deps
	@if [ -n "$(BENCH_BUILD)" ]; then \
		cmake -S . -B "$(BENCH_BUILD)" -DCMAKE_BUILD_TYPE=Release $(CMAKE_FLAGS) >/dev/null && \
		cmake --build "$(BENCH_BUILD)" -j $(JOBS); \
	else $(MAKE) build; fi
	BENCH_BUILD="$(BENCH_BUILD)" bench/run.sh

clean:
	rm -rf build build-asan

format:
	clang-format -i $$(git ls-files '*.c' '*.h')
