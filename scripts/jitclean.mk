# pyebpf-jitclean: removes the jitted-PID-N.so files perf inject leaves (see docs/jitdump.md).
.PHONY: install-jitclean
install: install-jitclean
install-jitclean:
	install -d $(DESTDIR)$(PREFIX)/bin
	install -m 755 scripts/pyebpf-jitclean $(DESTDIR)$(PREFIX)/bin/
