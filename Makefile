# apkpatch: `make demo` and `make test` work on a fresh Debian 12 machine with Swift installed: they install
# what is missing with apt-get first.
PREFIX ?= /usr/local
SWIFT ?= swift
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)
# Build dependencies, then the oracles the tests check our output with.
APT_PACKAGES := pkg-config libzip-dev libssl-dev zlib1g-dev libdeflate-dev \
	zipalign aapt apksigner apktool adb apkverifier android-framework-res \
	openjdk-17-jdk-headless unzip zip openssl python3 time

.PHONY: all deps build debug test demo install uninstall bench fuzz clean

all: build

deps:
	@missing=""; for p in $(APT_PACKAGES); do \
		dpkg-query -W -f='$${Status}' $$p 2>/dev/null | grep -q "install ok installed" || missing="$$missing $$p"; \
	done; \
	if [ -n "$$missing" ]; then \
		echo "Installing:$$missing"; \
		$(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get update -qq && \
		$(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $$missing; \
	fi

# The Swift runtime and Foundation linked in: the binary runs without a Swift installation and starts in
# half the time (dynamic linking of the Swift libraries was ~8 ms of CPU per run).
RELEASE_FLAGS := -c release --product apkpatch --static-swift-stdlib

build: deps
	$(SWIFT) build $(RELEASE_FLAGS)

debug: deps
	$(SWIFT) build

test: deps
	$(SWIFT) build --build-tests
	$(SWIFT) test --skip-build

demo: build
	./scripts/demo.sh

bench: build
	./scripts/bench/run.sh

# libFuzzer over the parsers, seeded from real APKs; FUZZ_SECONDS per target (default 60), FUZZ_TARGETS to choose.
FUZZ_TARGETS ?=
fuzz: deps
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
