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
	openjdk-17-jdk-headless unzip zip openssl python3 python3-venv time apksigcopier fsverity

.PHONY: all deps build-deps test-deps build debug test demo install uninstall bench fuzz clean

all: build

# Installs with apt-get whichever of the packages given are missing.
define apt_install_missing
	@missing=""; for p in $(1); do \
		dpkg-query -W -f='$${Status}' $$p 2>/dev/null | grep -q "install ok installed" || missing="$$missing $$p"; \
	done; \
	if [ -n "$$missing" ]; then \
		echo "Installing:$$missing"; \
		$(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get update -qq && \
		$(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $$missing; \
	fi
endef

build-deps:
	$(call apt_install_missing,$(BUILD_PACKAGES))

test-deps:
	$(call apt_install_missing,$(BUILD_PACKAGES) $(TEST_PACKAGES))

deps: test-deps

# The Swift runtime and Foundation linked in: the binary runs without a Swift installation and starts in
# half the time (dynamic linking of the Swift libraries was ~8 ms of CPU per run).
RELEASE_FLAGS := -c release --product apkpatch --static-swift-stdlib

build: build-deps
	$(SWIFT) build $(RELEASE_FLAGS)

debug: build-deps
	$(SWIFT) build

test: test-deps
	$(SWIFT) build --build-tests
	$(SWIFT) test --skip-build

demo: test-deps build
	./scripts/demo.sh

bench: test-deps build
	./scripts/bench/run.sh

# libFuzzer over the parsers, seeded from real APKs; FUZZ_SECONDS per target (default 60), FUZZ_TARGETS to choose.
FUZZ_TARGETS ?=
fuzz: test-deps
	./scripts/fuzz/run.sh $(FUZZ_TARGETS)

install: build
	install -d $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(PREFIX)/share/apkpatch $(DESTDIR)$(PREFIX)/share/man/man1 \
		$(DESTDIR)$(PREFIX)/share/bash-completion/completions $(DESTDIR)$(PREFIX)/share/zsh/site-functions \
		$(DESTDIR)$(PREFIX)/share/fish/vendor_completions.d
	install -m 755 .build/release/apkpatch $(DESTDIR)$(PREFIX)/bin/apkpatch
	rm -rf $(DESTDIR)$(PREFIX)/share/apkpatch/Templates
	cp -R Templates $(DESTDIR)$(PREFIX)/share/apkpatch/
	rm -rf $(DESTDIR)$(PREFIX)/share/apkpatch/Templates/sample
	.build/release/apkpatch --generate-completion-script bash > $(DESTDIR)$(PREFIX)/share/bash-completion/completions/apkpatch
	.build/release/apkpatch --generate-completion-script zsh > $(DESTDIR)$(PREFIX)/share/zsh/site-functions/_apkpatch
	.build/release/apkpatch --generate-completion-script fish > $(DESTDIR)$(PREFIX)/share/fish/vendor_completions.d/apkpatch.fish
	$(SWIFT) package --allow-writing-to-package-directory generate-manual
	install -m 644 .build/plugins/GenerateManual/outputs/apkpatch/apkpatch.1 $(DESTDIR)$(PREFIX)/share/man/man1/apkpatch.1

uninstall:
	rm -f $(DESTDIR)$(PREFIX)/bin/apkpatch $(DESTDIR)$(PREFIX)/share/man/man1/apkpatch.1 \
		$(DESTDIR)$(PREFIX)/share/bash-completion/completions/apkpatch $(DESTDIR)$(PREFIX)/share/zsh/site-functions/_apkpatch \
		$(DESTDIR)$(PREFIX)/share/fish/vendor_completions.d/apkpatch.fish
	rm -rf $(DESTDIR)$(PREFIX)/share/apkpatch

clean:
	rm -rf .build demo-out bench-work
