# Remote Python frame reader: the pystack-dump test tool (stacks of a PID, with --stats numbers).
PYSTACK_TOOL_OBJS := $(filter-out $(BUILD)/obj/user/main.o,$(USER_OBJS))

$(BUILD)/tools/pystack-dump: tests/tools/pystack_dump.c $(PYSTACK_TOOL_OBJS)
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) $(CFLAGS) $(LDFLAGS) -o $@ $^ $(USER_LIBS) $(LDLIBS)
all: $(BUILD)/tools/pystack-dump

# libFuzzer target for the location-table decoder and the _Py_DebugOffsets validator (clang).
$(BUILD)/fuzz/fuzz_pyframes: tests/fuzz/fuzz_pyframes.c user/linetable.c user/pyrt.c user/pyrt_debug.c user/maps.c user/remote.c
	@mkdir -p $(@D)
	$(CLANG) -g -O1 -D_GNU_SOURCE -fsanitize=fuzzer,address,undefined -Iuser -o $@ $^ -lelf
fuzz: $(BUILD)/fuzz/fuzz_pyframes
