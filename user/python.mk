# Remote Python frame reader: the pystack-dump test tool (stacks of a PID, with --stats numbers).
PYSTACK_TOOL_OBJS := $(filter-out $(BUILD)/obj/user/main.o,$(USER_OBJS))

$(BUILD)/tools/pystack-dump: tests/tools/pystack_dump.c $(PYSTACK_TOOL_OBJS)
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) $(CFLAGS) $(LDFLAGS) -o $@ $^ $(USER_LIBS) $(LDLIBS)
all: $(BUILD)/tools/pystack-dump

