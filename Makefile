# IMA appraisal selftests and their QEMU matrix.  'make help' lists targets.
#
#   make run                 build what changed, boot the whole matrix
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
comma := ,
BUILD ?= build

ifeq ($(V),1)
Q :=
PYTEST_VERBOSITY := -v
else
Q := @
PYTEST_VERBOSITY := -q
endif

# Matrix selection, passed through to the harness (see harness/conftest.py).
axis_args = $(if $(ARCHS),--archs=$(ARCHS)) \
	$(if $(MODES),--modes=$(MODES)) $(if $(POLICIES),--policies=$(POLICIES)) \
	$(if $(HASHES),--hashes=$(HASHES)) $(if $(SETATTR),--setattr=$(SETATTR))
matrix_args = $(if $(K),-k '$(K)') $(axis_args) \
	$(if $(VARIANTS),--variants=$(VARIANTS)) $(if $(JOBS),--jobs=$(JOBS)) \
	$(if $(MAKE_JOBS),--make-jobs=$(MAKE_JOBS)) $(if $(TIER),--tier=$(TIER)) \
	$(if $(ACCEL),--accel=$(ACCEL)) $(if $(KERNEL_TREE),--kernel-tree=$(KERNEL_TREE)) \
	$(if $(PROFILE),--profile=$(PROFILE)) \
	$(if $(EXTRA_PATCHES),--extra-patches='$(EXTRA_PATCHES)') $(if $(BASE),--base=$(BASE)) \
	--build-dir=$(BUILD)

.PHONY: help deps run unit check bisect-check bisect mutants regressions selftests bench \
	scan diff clean distclean

help:
	@echo 'Targets:'
	@echo '  run        build kernels, selftests and initramfs as needed; boot every matrix cell'
	@echo '  check      unit tests of the harness, the bisect proof, then the covering tier'
	@echo '             (one cell per arch x variant x mode x policy, every hash and setattr'
	@echo '             value, the cells mutants are caught in) of the kernels matrix.yaml'
	@echo '             check: names: 6.1 on both arches, 7.2 on x86_64 (what CI runs)'
	@echo '  unit       unit tests of the harness only (no QEMU)'
	@echo '  bisect     git bisect run in KERNEL_TREE from GOOD to BAD, each step built as'
	@echo '             variant "local" and booted in the selected cells (narrow them: ARCHS='
	@echo '             MODES= POLICIES= K=); bad when SPLAT= (title, signature or kind) is'
	@echo '             printed or TEST= (<program>/<case>) fails.  The command it hands to'
	@echo '             git bisect run is scripts/bisect-run (exit 0/1/125, 128 stops)'
	@echo '  bisect-check  the proof that bisect works (in check): a git repository of'
	@echo '             Debian'"'"'s tree with a known lockdep regression among five commits'
	@echo '  mutants    boot every known-bad patch of kernel-patches/regressions on top of'
	@echo '             the series (x86_64 unless ARCHS=; MUTANTS=<names or numbers>,'
	@echo '             e.g. MUTANTS=0015,0031, picks some; VERSION=7.2 (or 6.12): those of'
	@echo '             kernel-patches/regressions/7.2 on 7.2);'
	@echo '             fails unless each is caught as its Caught-by: trailers say;'
	@echo '             PROGRAMS=race_test boots only those programs (and judges only'
	@echo '             their trailers), REPEAT=10 boots the cells ten times and says'
	@echo '             in how many runs each was caught (exit 1 if any run missed)'
	@echo '  selftests  build the guest /selftests tree only: build/selftests/<arch>/'
	@echo '  bench      measure cold and warm builds, the boot floor, the matrix (narrow it'
	@echo '             with ARCHS= VARIANTS= etc.) and the edit loop, in BENCH_BUILD'
	@echo '             (build/bench); NO_COLD=1 keeps its kernels, STAGES= picks stages'
	@echo '  scan       the kernel splats of any console log or dmesg: LOG=<file> (- for stdin),'
	@echo '             VARIANT=<variant> matches its known_splats, VMLINUX=<file> decodes the'
	@echo '             traces (KERNEL_TREE=: the tree it was built from); exit 1: a splat not known'
	@echo '  diff       what changed from run A=<run dir or results.json> to B=<run dir>: new'
	@echo '             failures and splats, fixed cases, cells appeared or vanished; exit 1: new'
	@echo '  deps       install missing Debian packages and the arm64 guest userland'
	@echo '  clean      remove results and scratch disks; distclean: all of build/'
	@echo 'Variables: K=<pytest -k expr> ARCHS= MODES= POLICIES= HASHES= SETATTR= VARIANTS='
	@echo '           (comma lists) JOBS=<guest CPUs at once> MAKE_JOBS=<make -j> TIER=full|covering|check'
	@echo '           ACCEL=auto|tcg|kvm V=1 BUILD=<dir>'
	@echo '           PROFILE=<Hz>: sample each guest'"'"'s vCPUs through QEMU'"'"'s gdbstub into'
	@echo '           <cell>/profile.txt (user space, kernel by source directory and function)'
	@echo '           KERNEL_TREE=<your kernel source tree>: boot it as variant "local"'
	@echo '           EXTRA_PATCHES="a.patch b.patch": boot patched + these as variant "extra"'
	@echo '           BASE=<variant>: what EXTRA_PATCHES go on (default patched; e.g. patched-7.2)'
	@echo '           GOOD= BAD= SPLAT= TEST=: what make bisect bisects, and for what'

deps:
	$(Q)DEBDIR=$(BUILD)/debs/arm64 BUILD=$(BUILD) PYTHON=$(PYTHON) sh scripts/deps.sh

run: deps
	$(Q)$(PYTHON) -m pytest $(PYTEST_VERBOSITY) -p no:cacheprovider -rfE \
		harness/matrix_test.py $(matrix_args) $(PYTEST_ARGS)

unit:
	$(Q)DEBDIR=$(BUILD)/debs/arm64 BUILD=$(BUILD) PYTHON=$(PYTHON) SOURCES=no sh scripts/deps.sh
	$(Q)$(PYTHON) -m pytest $(PYTEST_VERBOSITY) -p no:cacheprovider harness/tests

# make check's tier (TIER=check) is the covering tier of the kernels
# matrix.yaml's check: section names, what CI's 45 minutes hold;
# make check TIER=covering boots every kernel's covering cells.
check: unit
	$(Q)$(MAKE) --no-print-directory bisect-check
	$(Q)$(MAKE) --no-print-directory run TIER=$(or $(TIER),check)

bisect-check: deps
	$(Q)$(PYTHON) -m harness.bisect_check --build-dir=$(BUILD)

# git bisect run's exit statuses pass through scripts/bisect-run, not make.
bisect_args = $(if $(SPLAT),--splat='$(SPLAT)') $(if $(TEST),--test='$(TEST)') \
	$(axis_args) $(if $(K),-k '$(K)') $(if $(JOBS),--jobs=$(JOBS)) \
	$(if $(MAKE_JOBS),--make-jobs=$(MAKE_JOBS)) $(if $(ACCEL),--accel=$(ACCEL)) \
	--build-dir=$(abspath $(BUILD))

bisect: deps
	$(Q)test -n "$(KERNEL_TREE)" -a -n "$(GOOD)" -a -n "$(BAD)" -a -n "$(SPLAT)$(TEST)" || \
		{ echo 'make bisect needs KERNEL_TREE=, GOOD=, BAD= and SPLAT= or TEST='; exit 2; }
	$(Q)git -C '$(KERNEL_TREE)' bisect start '$(BAD)' '$(GOOD)'
	$(Q)git -C '$(KERNEL_TREE)' bisect run $(CURDIR)/scripts/bisect-run $(bisect_args)
	$(Q)git -C '$(KERNEL_TREE)' bisect log | tail -n 3
	@echo 'the tree is left at the bisection; end it with: git -C $(KERNEL_TREE) bisect reset'

mutants: deps
	$(Q)$(PYTHON) -m harness mutants --build-dir=$(BUILD) \
		$(if $(ARCHS),--archs=$(ARCHS)) $(if $(JOBS),--jobs=$(JOBS)) \
		$(if $(VERSION),--version=$(VERSION)) $(if $(PROGRAMS),--programs=$(PROGRAMS)) \
		$(if $(REPEAT),--repeat=$(REPEAT)) $(subst $(comma), ,$(MUTANTS))

# The old name.
regressions: mutants

selftests: deps
	$(Q)$(PYTHON) -m harness selftests --build-dir=$(BUILD) $(subst $(comma), ,$(ARCHS))

# Cold builds delete and rebuild the kernels there: not in $(BUILD) itself.
BENCH_BUILD ?= $(BUILD)/bench

bench: deps
	$(Q)DEBDIR=$(BENCH_BUILD)/debs/arm64 BUILD=$(BENCH_BUILD) PYTHON=$(PYTHON) sh scripts/deps.sh
	$(Q)$(PYTHON) -m harness.bench --build-dir=$(BENCH_BUILD) $(axis_args) \
		$(if $(VARIANTS),--variants=$(VARIANTS)) \
		$(if $(NO_COLD),--no-cold) $(if $(STAGES),--stages=$(STAGES))

scan:
	$(Q)test -n "$(LOG)" || { echo 'make scan needs LOG=<console log, dmesg or journalctl -k file>'; exit 2; }
	$(Q)$(PYTHON) -m harness scan '$(LOG)' $(if $(VARIANT),--variant=$(VARIANT)) \
		$(if $(VMLINUX),--vmlinux='$(VMLINUX)') $(if $(KERNEL_TREE),--tree='$(KERNEL_TREE)')

diff:
	$(Q)test -n "$(A)" -a -n "$(B)" || { echo 'make diff needs A=<run dir or results.json> B=<run dir>'; exit 2; }
	$(Q)$(PYTHON) -m harness diff '$(A)' '$(B)'

clean:
	rm -rf $(BUILD)/results $(BUILD)/scratch

distclean:
	rm -rf $(BUILD)
