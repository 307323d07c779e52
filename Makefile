# IMA appraisal selftests and their QEMU matrix.  'make help' lists targets.
#
#   make run                 build what changed, boot the whole matrix
#   make check               unit tests of the harness, then 'make run'
#   make run K='aarch64 and enforce and exec'      pytest -k selection
#   make run VARIANTS=skip-exec-appraisal          a variant not in the default axes
#   make run KERNEL_TREE=~/src/linux               your own kernel tree, as variant "local"
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
matrix_args = $(if $(K),-k '$(K)') $(if $(ARCHS),--archs=$(ARCHS)) \
	$(if $(MODES),--modes=$(MODES)) $(if $(POLICIES),--policies=$(POLICIES)) \
	$(if $(VARIANTS),--variants=$(VARIANTS)) $(if $(JOBS),--jobs=$(JOBS)) \
	$(if $(ACCEL),--accel=$(ACCEL)) $(if $(KERNEL_TREE),--kernel-tree=$(KERNEL_TREE)) \
	--build-dir=$(BUILD)

.PHONY: help deps run unit check regressions selftests clean distclean

help:
	@echo 'Targets:'
	@echo '  run        build kernels, selftests and initramfs as needed; boot every matrix cell'
	@echo '  check      unit tests of the harness, then the full matrix (what CI runs)'
	@echo '  unit       unit tests of the harness only (no QEMU)'
	@echo '  regressions  boot every deliberately broken kernel (x86_64 unless ARCHS=);'
	@echo '             fails unless each is caught as matrix.yaml says'
	@echo '  selftests  build the guest /selftests tree only: build/selftests/<arch>/'
	@echo '  deps       install missing Debian packages and the arm64 guest userland'
	@echo '  clean      remove results and scratch disks; distclean: all of build/'
	@echo 'Variables: K=<pytest -k expr> ARCHS= MODES= POLICIES= VARIANTS= (comma lists)'
	@echo '           JOBS=<guests at once> ACCEL=auto|tcg|kvm V=1 BUILD=<dir>'
	@echo '           KERNEL_TREE=<your kernel source tree>: boot it as variant "local"'

deps:
	$(Q)sh scripts/deps.sh

run: deps
	$(Q)$(PYTHON) -m pytest $(PYTEST_VERBOSITY) -p no:cacheprovider -rfE \
		harness/matrix_test.py $(matrix_args) $(PYTEST_ARGS)

unit: deps
	$(Q)$(PYTHON) -m pytest $(PYTEST_VERBOSITY) -p no:cacheprovider harness/tests

check: unit
	$(Q)$(MAKE) --no-print-directory run

regressions: deps
	$(Q)$(PYTHON) -m harness regressions --build-dir=$(BUILD) \
		$(if $(ARCHS),--archs=$(ARCHS)) $(subst $(comma), ,$(VARIANTS))

selftests: deps
	$(Q)$(PYTHON) -m harness selftests --build-dir=$(BUILD) $(subst $(comma), ,$(ARCHS))

clean:
	rm -rf $(BUILD)/results $(BUILD)/scratch

distclean:
	rm -rf $(BUILD)
