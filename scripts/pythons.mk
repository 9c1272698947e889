# test-pythons: CPython 3.14 and 3.15 from Debian unstable, unpacked under build/pythons: the
# release and debug builds (binary packages), and the free-threaded builds (built from the source
# packages by scripts/build-python-ft, cached in ~/.cache/pyebpf). See scripts/test-pythons and
# docs/versions.md. An unreachable mirror (exit 75) is only a warning, and so are source packages
# that cannot be fetched: the tests that need these interpreters then SKIP; any other failure
# stops make. dpkg-dev (dpkg-source) and libffi-dev (ctypes) are in DEBIAN_PACKAGES for the build.
.PHONY: test-pythons
test-pythons:
	@BUILD=build scripts/test-pythons; rc=$$?; \
	if [ $$rc = 75 ]; then echo "warning: CPython 3.14/3.15 not fetched; their tests will SKIP" >&2; \
	elif [ $$rc != 0 ]; then exit $$rc; fi
