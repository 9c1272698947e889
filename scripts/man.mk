# The pyebpf-sample man page: `man build/pyebpf-sample.1` reads it from the tree; make install
# puts it under $(PREFIX)/share/man/man1.
$(BUILD)/pyebpf-sample.1: docs/pyebpf-sample.1
	@mkdir -p $(@D)
	sed 's/@VERSION@/$(VERSION)/g' $< > $@
all: $(BUILD)/pyebpf-sample.1

.PHONY: install-man
install-man: $(BUILD)/pyebpf-sample.1
	install -d $(DESTDIR)$(PREFIX)/share/man/man1
	install -m 644 $< $(DESTDIR)$(PREFIX)/share/man/man1/
install: install-man
