# unit-public.mk: make fragment used by test/peer/jemalloc-suite.sh.  It is run with
# `make -f` in a configured jemalloc release tree and includes that tree's generated
# Makefile, so every variable below (CC, the object lists, the link flags) is jemalloc's own.
# It adds what the release Makefile lacks:
#
#   peer-print-lists   the tree's test lists (unit, integration, C++ integration, stress) and
#                      the names the unit harness's utilities define, one "kind: names" line
#                      each, so that the script runs exactly the programs of the release's own
#                      `make check` / `make stress`;
#   peer-unit-objs     the unit programs' objects and the unit test harness, compiled as the
#                      release compiles them (unit mode: the allocator's headers, public names
#                      prefixed jet_);
#   test/unit-public/NAME
#                      a unit program linked against the shared library: in copies of its
#                      object and of the harness objects, each public name jet_X becomes X
#                      (objcopy --redefine-sym), so those calls go to the library under test;
#                      the harness's utilities (formatted output, time) and the harness's own
#                      hooks resolve to the release's jet_ objects, as for its stress programs.
#                      The script links only programs that call nothing else of the allocator.
#
# Nothing of jemalloc's is copied into this repository: the rules name its files where they lie.

include Makefile

PEER_UNIT_DIR := $(objroot)test/unit-public/
# The public functions (jemalloc's public_symbols, less the ones the tests never call).
PEER_PUBLIC := malloc calloc posix_memalign aligned_alloc realloc free mallocx rallocx \
	xallocx sallocx dallocx sdallocx nallocx mallctl mallctlnametomib mallctlbymib \
	malloc_stats_print malloc_usable_size memalign valloc malloc_message malloc_conf
PEER_REDEFINE := $(foreach s,$(PEER_PUBLIC),--redefine-sym jet_$(s)=$(s))
PEER_TESTLIB_OBJS := $(C_TESTLIB_UNIT_OBJS:$(objroot)test/src/%=$(PEER_UNIT_DIR)lib/%)
PEER_UTIL_OBJS := $(objroot)src/malloc_io.jet.$(O) $(objroot)src/nstime.jet.$(O) \
	$(objroot)src/ticker.jet.$(O)

.PHONY: peer-print-lists peer-unit-objs
peer-print-lists:
	@echo "unit: $(notdir $(TESTS_UNIT:%.c=%))"
	@echo "integration: $(notdir $(TESTS_INTEGRATION:%.c=%))"
	@echo "integration_cpp: $(notdir $(TESTS_INTEGRATION_CPP:%.cpp=%))"
	@echo "stress: $(notdir $(TESTS_STRESS:%.c=%))"
	@echo "enable_prof: $(enable_prof)"
	@echo "public: $(PEER_PUBLIC)"
	@echo "util_objs: $(PEER_UTIL_OBJS)"

peer-unit-objs: $(TESTS_UNIT_OBJS) $(C_TESTLIB_UNIT_OBJS) $(C_JET_OBJS)

$(PEER_UNIT_DIR)lib/%: $(objroot)test/src/%
	@mkdir -p $(@D)
	objcopy $(PEER_REDEFINE) $< $@

$(PEER_UNIT_DIR)%.$(O): $(objroot)test/unit/%.$(O)
	@mkdir -p $(@D)
	objcopy $(PEER_REDEFINE) $< $@

$(PEER_UNIT_DIR)%$(EXE): $(PEER_UNIT_DIR)%.$(O) $(PEER_TESTLIB_OBJS) $(C_JET_OBJS) \
    $(objroot)lib/$(LIBJEMALLOC).$(IMPORTLIB)
	$(CC) $(TEST_LD_MODE) $(LDTARGET) $(filter %.$(O),$^) $(call RPATH,$(objroot)lib) \
	    $(objroot)lib/$(LIBJEMALLOC).$(IMPORTLIB) $(LDFLAGS) $(filter-out -lm,$(LIBS)) $(LM) \
	    $(EXTRA_LDFLAGS)
