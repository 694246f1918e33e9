# flashattn-mlir: the README's two commands.
#
#   make run     install what is missing, build, run the main job
#   make check   install what is missing, build, run every test (lit + ctest)
#   make fuzz    the mutation fuzzers for FUZZ_SECONDS per tool (600)
#
# Both work on a fresh Debian 12 machine (root, or a user with sudo) and are
# quick when everything is already there. BUILD_DIR selects the build tree.

BUILD_DIR ?= build
CMAKE_FLAGS ?=

# Debian 12 packages the build and the tests need (LLVM/MLIR 22 come from
# bookworm-security). Checked one by one with dpkg-query; apt-get runs only
# when one is missing.
APT_PACKAGES := libmlir-22-dev mlir-22-tools llvm-22-dev llvm-22-tools \
                ninja-build cmake make g++ python3 pkg-config libxxhash-dev \
                libcjson-dev libxtensor-dev python3-torch python3-pytest

SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)

.PHONY: run check deps build docs bench fuzz clean

deps:
	@missing=""; \
	for p in $(APT_PACKAGES); do \
	  dpkg-query -W -f='$${Status}' $$p 2>/dev/null | grep -q "install ok installed" || missing="$$missing $$p"; \
	done; \
	if [ -n "$$missing" ]; then \
	  echo "make: installing$$missing"; \
	  $(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get update -q && \
	  $(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends $$missing; \
	fi

$(BUILD_DIR)/build.ninja: | deps
	cmake -G Ninja -S . -B $(BUILD_DIR) $(CMAKE_FLAGS)

build: deps $(BUILD_DIR)/build.ninja
	cmake --build $(BUILD_DIR)

run: build
	scripts/run-examples.sh $(BUILD_DIR)

check: build
	python3 scripts/check.py $(BUILD_DIR)

# The mutation fuzzers, long mode (scripts/fuzz.py): FUZZ_SECONDS per tool
# (fa-opt, fa-compile, runtime); findings are saved in fuzz-crashes/.
FUZZ_SECONDS ?= 600
fuzz: build
	python3 scripts/fuzz.py all --build $(BUILD_DIR) --seconds $(FUZZ_SECONDS) \
	  --seed $$(date +%s) --crashes fuzz-crashes

# The host benchmark against unfused OpenBLAS attention (not a test); needs
# Debian's libopenblas-dev, installed here when missing.
bench: deps
	@dpkg-query -W -f='$${Status}' libopenblas-dev 2>/dev/null | grep -q "install ok installed" || \
	  ( $(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get update -q && \
	    $(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends libopenblas-dev )
	cmake -G Ninja -S . -B $(BUILD_DIR) $(CMAKE_FLAGS)
	cmake --build $(BUILD_DIR) --target host-bench
	$(BUILD_DIR)/bin/host-bench

# Regenerates docs/Dialects/ and docs/Passes/ from the ODS definitions (checked by tests).
docs: build
	cp $(BUILD_DIR)/docs/Dialects/*.md docs/Dialects/
	cp $(BUILD_DIR)/docs/Passes/*.md docs/Passes/

clean:
	rm -rf $(BUILD_DIR)
