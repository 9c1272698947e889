# Output writers: the render test driver links the user objects (the generic tests/progs rule
# links libpyjit only), and the JavaScript test tools (a headless-browser driver for the system
# chromium, speedscope's schema, a JSON-schema validator) install into build/js (one copy, the
# sanitized build uses it too) from the committed lock file. `make js-deps` needs network once;
# the tests skip when they are missing.

$(BUILD)/progs/render_test: tests/progs/render_test.c $(USER_LIB_OBJS) $(BUILD)/libpyjit.a
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) $(CFLAGS) $(LDFLAGS) -o $@ $^ $(USER_LIBS) $(LDLIBS)
$(BUILD)/progs/render_test-nofp: tests/progs/render_test.c $(USER_LIB_OBJS) $(BUILD)/libpyjit.a
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) $(CFLAGS) -fomit-frame-pointer $(LDFLAGS) -o $@ $^ $(USER_LIBS) $(LDLIBS)

JS_DIR := build/js
.PHONY: js-deps
js-deps: $(JS_DIR)/node_modules/.installed
$(JS_DIR)/node_modules/.installed: tests/js/package.json tests/js/package-lock.json
	@mkdir -p $(JS_DIR)
	cp tests/js/package.json tests/js/package-lock.json $(JS_DIR)/
	cd $(JS_DIR) && PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1 npm ci --no-audit --no-fund --ignore-scripts
	touch $@
