# IMA appraisal selftests and their QEMU matrix.  'make help' lists targets.
#
#   make run                 build what changed, boot the check tier (it says what it leaves out)
#   make run TIER=full       ... every cell of the matrix
#   make check               unit tests, the bisect proof, the check tier (CI)
#   make run K='aarch64 and enforce and exec'      pytest -k selection
#   make run VARIANTS=patched HASHES=sha256        narrow any axis (comma lists)
#   make run KERNEL_TREE=~/src/linux               your own kernel tree, as variant "local"
#   make run EXTRA_PATCHES="a.patch b.patch"       patched + these patches, as variant "extra"
#   make run EXTRA_PATCHES=a.patch BASE=patched-7.2   ... on another kernel (any variant)
#   make run K=aarch64-patched-enforce PROFILE=200 where each guest's CPU time goes:
#                                                  <cell>/profile.txt (kernel functions)
#   make mutants                                   every known-bad patch must be caught
#   make bisect KERNEL_TREE=~/linux GOOD=v6.1.100 BAD=HEAD SPLAT=lockdep-circular
#                                                  git bisect run a splat (or TEST=) in your tree
#
# Build output goes to build/ (kernel tree, kernels, initramfs, results).

PYTHON ?= /usr/bin/python3
BUILD ?= build

ifeq ($(V),1)
Q :=
else
Q := @
endif

# Every target but deps, clean and distclean is the harness's command of
# that name.  --make-vars: it reads the variables of make's command line
# (ARCHS=, K=, ... which make exports to its recipes) as its options, each
# defined once in harness/selection.py; 'make help' lists them.
H = $(PYTHON) -m harness --make-vars
DEPS = DEBDIR=$(BUILD)/debs/arm64 BUILD=$(BUILD) PYTHON=$(PYTHON) sh scripts/deps.sh

.PHONY: help deps run unit check bisect-check bisect mutants selftests bench \
	scan diff clean distclean

help:
	$(Q)$(PYTHON) -m harness --help
	@echo
	@echo 'make only: deps (scripts/deps.sh: what the targets that build or boot run'
	@echo 'first), clean (results and scratch disks), distclean (all of build/); V=1'
	@echo '(commands and pytest -v), BUILD=<dir>, PYTHON=<python3 with pytest, PyYAML>.'

deps:
	$(Q)$(DEPS)

run: deps
	$(Q)$(H) run

unit:
	$(Q)SOURCES=no $(DEPS)
	$(Q)$(H) unit

check: deps
	$(Q)$(H) check

bisect-check: deps
	$(Q)$(H) bisect-check

bisect: deps
	$(Q)$(H) bisect

mutants: deps
	$(Q)$(H) mutants

selftests: deps
	$(Q)$(H) selftests

# Cold builds delete and rebuild the kernels there: not in $(BUILD) itself.
BENCH_BUILD ?= $(BUILD)/bench

bench: deps
	$(Q)DEBDIR=$(BENCH_BUILD)/debs/arm64 BUILD=$(BENCH_BUILD) PYTHON=$(PYTHON) sh scripts/deps.sh
	$(Q)$(H) bench --build-dir=$(BENCH_BUILD)

scan:
	$(Q)$(H) scan

diff:
	$(Q)$(H) diff

clean:
	rm -rf $(BUILD)/results $(BUILD)/scratch

distclean:
	rm -rf $(BUILD)
