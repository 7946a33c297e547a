# Two commands do all set-up on a fresh machine that has only python3:
#   make lab    build .venv if needed, then open JupyterLab on the notebooks
#   make test   build .venv if needed, then lint, and the unit tests and nbval on every notebook
#               (on a second CPU code path, so outputs that depend on the CPU fail here); CI also
#               runs make test-publish, the published editions in a browser, JupyterLab and nbgrader
SHELL := /bin/bash
.DEFAULT_GOAL := help

PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
# The nbgrader layer over .venv (see `course` below). Set here, before any rule names it: make
# expands a rule's prerequisites when it reads the rule, so a later definition would leave
# `test-publish: $(COURSE_STAMP)` without it.
COURSE_VENV  := .venv-course
COURSE_STAMP := $(COURSE_VENV)/.installed
NB     ?= notebooks

# The same settings for `make execute` (which writes the stored outputs) and `make test`
# (which checks them), so that outputs do not depend on the machine's core count.
export PYTHONHASHSEED := 0
export OMP_NUM_THREADS := 1
export MKL_NUM_THREADS := 1
export PYDEVD_DISABLE_FILE_VALIDATION := 1
# Write byte-code on first import: some images set PYTHONDONTWRITEBYTECODE=1, and then every
# kernel compiles torch from source again (about 6 s per start instead of 3 s here).
unexport PYTHONDONTWRITEBYTECODE
NBVAL_ARGS := --nbval --nbval-current-env --nbval-cell-timeout=600 --no-loadscope-reorder \
              --nbval-sanitize-with=nbval_sanitize.cfg

.PHONY: help venv lab test test-publish lint unit nbval nbval-portable nbval-plain claims execute bench student slides slides-solutions site links po zh compat lock course course-test lock-course clean

# Stored outputs must hold on every x86-64 CPU (docs/outputs.md, "Outputs that hold on every CPU").
# `make execute` writes them on EXECUTE_PATH (ATen's non-vectorised kernels unless told otherwise,
# the path every x86-64 CPU can take) and records that path in each notebook's metadata;
# `make test` and `make nbval-portable` re-run the notebooks on another path: this CPU's own where
# it differs from the recorded one, else one step down (benchmarks/cpu_path.py says which, and why).
# Other code paths round differently, so a printed number that depends on the CPU fails here
# instead of on a student's laptop. TEST_PATH=own|avx512|avx2|default forces one.
EXECUTE_PATH ?= default
TEST_PATH    ?= auto
PATH_ENV      = env $$($(BIN)/python benchmarks/cpu_path.py env $(1) $(NB))
PLAIN_ENV    := ATEN_CPU_CAPABILITY=default MKL_CBWR=AVX ONEDNN_MAX_CPU_ISA=AVX

# JupyterLab refuses to start as root (containers, cloud workspaces) unless asked to.
ROOT_FLAG := $(if $(filter 0,$(shell id -u)),--allow-root)
LAB_ARGS ?=

help:
	@echo "make lab       set up .venv (first time only) and open JupyterLab"
	@echo "make test      set up .venv (first time only), then ruff, and the unit tests and nbval-portable in one run"
	@echo "make test-publish  the published editions: every deck and site page in Chromium (both languages),"
	@echo "               JupyterLab in Chromium, nbgrader grading 01, the student and Chinese editions' 01 run"
	@echo "               top to bottom (CI runs it after make test)"
	@echo "make venv      set up .venv only (the other targets do it when needed)"
	@echo "make lint      ruff check and format check"
	@echo "make unit      the unit tests only (tests/ but for make test-publish's, on this CPU's own code path)"
	@echo "make nbval     nbval on this CPU's own code path (NB=path for one notebook)"
	@echo "make nbval-portable  nbval on a CPU path other than the stored outputs' (as make test runs it)"
	@echo "make nbval-plain     nbval on ATen's non-vectorised path, which every x86-64 CPU can take"
	@echo "make claims    retrain every training notebook over seeds and CPU paths; margins of its claims (not a test)"
	@echo "make bench     time attnlib's attention against PyTorch's own, side by side, as ratios (not a test)"
	@echo "make execute   re-run notebooks top to bottom and store outputs (NB=path for one; EXECUTE_PATH=default)"
	@echo "make student   write the student edition (solutions stubbed) into student/ (STUDENT_DIR=path for another;"
	@echo "               STUDENT_LANG=zh_CN: the Chinese one, into student-zh/)"
	@echo "make course    write the nbgrader course into build/course/ (COURSE=path for another; COURSE_DRAWS=n your own"
	@echo "               hidden cases) and set up .venv-course, where nbgrader runs"
	@echo "make course-test  grade four submissions of every notebook with nbgrader (not a test of make test; long)"
	@echo "make slides    build one reveal.js slide deck per notebook into build/slides/ (offline; NB=path for one);"
	@echo "               exercises show the student's stub, as in the student edition: decks for class"
	@echo "make slides-solutions  the instructor decks, WITH the solutions, into build/slides-solutions/"
	@echo "make site      build the series as a static web site into build/site/ (decks included)"
	@echo "make links     write Colab and Binder links into README and the notebooks (needs the GitHub address)"
	@echo "make po        refresh the translation catalogues in locale/ (NB=path starts one for that notebook)"
	@echo "make zh        build the Chinese edition into build/zh/ from the catalogues and run it (ZH_DIR=path for"
	@echo "               another; ZH_EXECUTE=0 only translates)"
	@echo "make compat    run every notebook (nbval-lax) in a fresh venv with the newest torch and no attnlib (not a test)"
	@echo "make lock      regenerate requirements.txt (exact pins) from requirements.in"
	@echo "make clean     remove .venv and caches"

venv: $(STAMP)

# Rebuilt whenever the pins or the package metadata change. On Linux requirements.txt is the
# whole environment, so nothing needs resolving (--no-deps); elsewhere (macOS) pip and uv also
# resolve the few packages that exist only there (ipykernel needs appnope on macOS), and every
# pinned package keeps its pin. uv installs everything in a few seconds from its cache, where pip
# takes about a minute; without uv (no network to PyPI, say) pip installs everything.
#
# torch: PyPI's Linux wheels are CUDA builds that need about 3 GB of NVIDIA packages, which the
# pins leave out. The CPU build that made the stored outputs comes from a folder of wheels that
# pip is configured to read (find-links in pip.conf or PIP_FIND_LINKS) where one holds it, else
# from PyTorch's own index (TORCH_INDEX); the pin `torch==2.13.0` accepts `2.13.0+cpu`, so the
# install from requirements.txt then keeps it.
#
# Byte-code: rather than compiling all 11,500 files of the environment (37 s here, most of them
# never imported), the modules that the tests and every notebook kernel import are compiled once
# here, by importing them in two processes side by side.
#
# requirements-test-nodeps.txt: test-only pins installed with --no-deps on every platform (their
# metadata asks for packages the tests never import, e.g. TensorFlow); `make lock` leaves them alone.
UNAME       := $(shell uname -s)
NO_DEPS     := $(if $(filter Linux,$(UNAME)),--no-deps)
FIND_LINKS   = $(sort $(PIP_FIND_LINKS) $(shell $(PYTHON) -m pip config get global.find-links 2>/dev/null))
TORCH_INDEX ?= https://download.pytorch.org/whl/cpu
# $(call torch_from_index,VERSION): the install arguments for torch's CPU build from TORCH_INDEX,
# or nothing where no index is needed (not Linux, or a wheel folder holds the CPU build).
torch_from_index = $(if $(and $(filter Linux,$(UNAME)),$(if $(wildcard $(addsuffix \
  /torch-$(1)+cpu-*.whl,$(patsubst file://%,%,$(FIND_LINKS)))),,y)),--index-url $(TORCH_INDEX) torch==$(1))
TORCH_PIN    = $(call torch_from_index,$(patsubst torch==%,%,$(shell grep -i '^torch==' requirements.txt)))
PIP_INSTALL := $(BIN)/python -m pip install --quiet --disable-pip-version-check
UV_INSTALL   = $(BIN)/uv pip install --quiet --python $(BIN)/python $(addprefix --find-links=,$(FIND_LINKS))
WARM_KERNEL := torch matplotlib.pyplot sklearn.datasets tqdm.auto hypothesis
WARM_TOOLS  := IPython ipykernel.kernelapp ipywidgets jupyter_client nbformat nbval pytest xdist
IMPORT_ALL  := import importlib, sys; [importlib.import_module(name) for name in sys.argv[1:]]
$(STAMP): requirements.txt requirements-test-nodeps.txt pyproject.toml
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	@$(BIN)/python -c 'import sys; v = sys.version_info[:2]; v == (3, 11) or print(f"warning: stored outputs were made with Python 3.11, this is {v[0]}.{v[1]}")'
	$(if $(TORCH_PIN),@echo "make venv: torch's CPU build from $(TORCH_INDEX) (PyPI's Linux build is for CUDA)")
	{ $(PIP_INSTALL) --no-deps $$(grep -i '^uv==' requirements.txt) \
	    $(if $(TORCH_PIN),&& $(UV_INSTALL) --no-deps $(TORCH_PIN)) \
	    && $(UV_INSTALL) $(NO_DEPS) -r requirements.txt && $(UV_INSTALL) --no-deps --no-build-isolation -e . \
	    && $(UV_INSTALL) --no-deps -r requirements-test-nodeps.txt; } \
	  || { echo "make venv: uv failed, pip installs everything (a minute or two)"; \
	       $(if $(TORCH_PIN),$(PIP_INSTALL) --no-deps $(TORCH_PIN) &&) \
	       $(PIP_INSTALL) $(NO_DEPS) -r requirements.txt && $(PIP_INSTALL) --no-deps --no-build-isolation -e . \
	       && $(PIP_INSTALL) --no-deps -r requirements-test-nodeps.txt; } \
	  || { echo "make venv failed. $(if $(TORCH_PIN),If torch could not be installed: its CPU build comes from \
	TORCH_INDEX=$(TORCH_INDEX); pass TORCH_INDEX=<a mirror of it> or PIP_FIND_LINKS=<a folder with \
	the torch-*+cpu-*.whl file>.)"; exit 1; }
	$(BIN)/python -c '$(IMPORT_ALL)' $(WARM_KERNEL) & kernel=$$!; \
	  $(BIN)/python -c '$(IMPORT_ALL)' $(WARM_TOOLS) && wait $$kernel
	@touch $(STAMP)

lab: $(STAMP)
	@if [ -n "$(ROOT_FLAG)" ]; then \
	  echo "make lab: running as root (a container?), so adding --allow-root as JupyterLab asks."; \
	  echo "          From outside a container: publish port 8888 and pass LAB_ARGS=--ip=0.0.0.0"; fi
	@echo "make lab: open the http://127.0.0.1:8888/lab?token=... URL that JupyterLab prints below."
	$(BIN)/jupyter lab --notebook-dir=. $(ROOT_FLAG) $(LAB_ARGS)

lint: $(STAMP)
	$(BIN)/ruff check attnlib tools tests benchmarks conftest.py
	$(BIN)/ruff format --check attnlib tools tests benchmarks conftest.py

# `make test` leaves out the tests marked `publish` (pyproject.toml): they check what is published
# from the notebooks (every deck and site page in Chromium in both languages, JupyterLab in
# Chromium, nbgrader grading 01, the student editions' and the Chinese edition's 01 run top to
# bottom) and took about 370 of a fresh run's 830 worker-seconds on the 2-core machine. `make test-publish`
# runs them; .ci/run runs it after `make test`, so CI still checks everything.
NOT_PUBLISH := -m "not publish"
unit: $(STAMP)
	$(BIN)/python -m pytest tests -q -n 2 $(NOT_PUBLISH)

# Each run ends with a table of seconds per notebook against its budget (conftest.py).
NBVAL_RUN = $(BIN)/python -m pytest $(NBVAL_ARGS) -n 2 --dist loadfile -q $(NB)
nbval: $(STAMP)
	$(NBVAL_RUN)

nbval-portable: $(STAMP)
	$(call PATH_ENV,$(TEST_PATH)) $(NBVAL_RUN)

nbval-plain: $(STAMP)
	$(PLAIN_ENV) $(NBVAL_RUN)

# Retrains the notebooks that train (seeds 0-4 on this CPU's path, seed 0 on the others) and prints
# the margin of every claim about a trained model; CLAIMS_ARGS="--markdown docs/claims.md" writes
# the tables. About 20-40 minutes on two AVX2 cores, 12 on two AVX-512 ones. Not a test (benchmarks/claims.py).
CLAIMS_ARGS ?=
claims: $(STAMP)
	$(BIN)/python benchmarks/claims.py $(CLAIMS_ARGS)

# The unit tests and nbval-portable in one pytest session: both workers stay busy to the end
# (two sessions in a row leave one worker idle while the other finishes the Chromium walk),
# and the unit tests run on the second code path too. conftest.py orders the work.
test: lint
	$(call PATH_ENV,$(TEST_PATH)) $(BIN)/python -m pytest $(NBVAL_ARGS) -n 2 --dist loadfile -q $(NOT_PUBLISH) tests $(NB)

# The published editions (the tests marked `publish`); nbgrader runs from .venv-course, built here.
test-publish: $(STAMP) $(COURSE_STAMP)
	$(BIN)/python -m pytest -n 2 --dist loadfile -q -m publish tests

# Stored outputs come only from here: a fresh kernel, top to bottom, with the settings above.
# tools.kernels.SteadyKernelManager: nbclient's waits in one-second slices, so that a reply whose
# socket wake-up was missed is read within a second, not after the 600 s timeout (tools/kernels.py).
execute: $(STAMP)
	$(call PATH_ENV,$(EXECUTE_PATH)) PYTHONPATH=$(CURDIR) $(BIN)/jupyter nbconvert --to notebook --execute --inplace \
	  --ExecutePreprocessor.timeout=600 --ExecutePreprocessor.kernel_name=python3 \
	  --ExecutePreprocessor.kernel_manager_class=tools.kernels.SteadyKernelManager \
	  $(if $(filter %.ipynb,$(NB)),$(NB),$(NB)/*.ipynb)
	$(call PATH_ENV,$(EXECUTE_PATH)) $(BIN)/python benchmarks/cpu_path.py record \
	  $(if $(filter %.ipynb,$(NB)),$(NB),$(NB)/*.ipynb)

# The publishing tools live in tools/, outside the attnlib package (the wheel does not ship them),
# and run from the repository root: `python -m tools.<name>`.
#
# Ratios against PyTorch's own attention, measured side by side in one run (benchmarks/attention.py);
# a timing, not a test. BENCH_ARGS=--quick runs few rounds; --only mha|functional|transformer.
BENCH_ARGS ?=
bench: $(STAMP)
	$(BIN)/python benchmarks/attention.py $(BENCH_ARGS)

# Solutions become stubs; a notebook the student already changed is never overwritten.
# STUDENT_LANG=zh_CN builds the Chinese edition first (make zh) and writes its student edition
# into student-zh/ (tools/student.py --lang).
STUDENT_LANG ?= en
STUDENT_DIR ?= $(if $(filter en,$(STUDENT_LANG)),student,student-zh)
student: $(STAMP)
	$(if $(filter-out en,$(STUDENT_LANG)),$(MAKE) --no-print-directory zh &&) \
	$(BIN)/python -m tools.student $(if $(filter-out en,$(STUDENT_LANG)),$(ZH_DIR) $(STUDENT_DIR) \
	  --lang $(STUDENT_LANG),notebooks $(STUDENT_DIR))

# The nbgrader course for instructors (tools/course.py, docs/grading.md): source/<NN_name>/ per
# notebook and an nbgrader_config.py, in COURSE. nbgrader runs from .venv-course, so that .venv
# (what students and `make lab` use) gets none of nbgrader's server and JupyterLab extensions.
# .venv-course is a layer over .venv: it holds only requirements-course.txt (nbgrader and what it
# adds, exact pins, installed --no-deps); tools/venv_layer.py, copied in, puts .venv's packages
# after its own on sys.path and .venv's Jupyter data and config after its own, so every series pin
# is the one of .venv (seconds to build, against a minute for a second full environment). `make test-publish` grades one notebook with it (tests/tools/test_course.py);
# `make course-test` grades all 14, two at a time.
COURSE       ?= build/course
COURSE_DRAWS ?= 1000
$(COURSE_STAMP): $(STAMP) requirements-course.txt tools/venv_layer.py
	rm -rf $(COURSE_VENV) && $(PYTHON) -m venv --without-pip $(COURSE_VENV)
	$(BIN)/uv pip install --quiet --python $(COURSE_VENV)/bin/python $(addprefix --find-links=,$(FIND_LINKS)) \
	    --no-deps -r requirements-course.txt \
	  || $(PIP_INSTALL) --python $(COURSE_VENV)/bin/python --no-deps -r requirements-course.txt
	own=$$($(COURSE_VENV)/bin/python -c 'import sysconfig; print(sysconfig.get_path("purelib"))'); \
	  sed 's|@SERIES@|$(abspath $(VENV))|' tools/venv_layer.py > "$$own/series_venv_layer.py" \
	  && echo "import series_venv_layer" > "$$own/zz_series_venv_layer.pth"
	$(COURSE_VENV)/bin/python -c '$(IMPORT_ALL)' nbgrader.apps attnlib.check
	@touch $(COURSE_STAMP)

course: $(STAMP) $(COURSE_STAMP)
	$(BIN)/python -m tools.course --draws $(COURSE_DRAWS) notebooks $(COURSE)
	@echo "make course: now 'source $(COURSE_VENV)/bin/activate; cd $(COURSE)' and run nbgrader there (docs/grading.md)."

course-test: $(COURSE_STAMP)
	COURSE_NOTEBOOKS=all $(BIN)/python -m pytest tests/tools/test_course.py -q -n 2 --dist load --durations=0

# One reveal.js deck per notebook (speaker notes: press S), opening offline from local files:
# reveal.js is copied next to the decks from a pinned package, maths is MathML made at build
# time, explorers are stills, progress bars and training logs are left out (tools/slides.py).
# The class decks show each exercise as the student edition does (text and stub, no solution);
# `make slides-solutions` builds the instructor decks with the solutions, for after the deadline,
# into a folder of their own (their title slide says "Instructor deck: contains solutions").
SLIDES_DIR ?= build/slides
SOLUTIONS_DIR ?= build/slides-solutions
SITE_DIR   ?= build/site
slides: $(STAMP)
	$(BIN)/python -m tools.slides $(NB) $(SLIDES_DIR)
	$(BIN)/python -m tools.slides --lang zh_CN $(NB) $(SLIDES_DIR)/zh

slides-solutions: $(STAMP)
	$(BIN)/python -m tools.slides --solutions $(NB) $(SOLUTIONS_DIR)
	$(BIN)/python -m tools.slides --solutions --lang zh_CN $(NB) $(SOLUTIONS_DIR)/zh

# The series as a static web site from the stored notebooks (nothing is re-executed), with the
# decks copied into it: open build/site/index.html (tools/site.py). Colab and Binder links where
# the repository's address is known, taken as make links takes it (below).
site: slides
	$(BIN)/python -m tools.site notebooks $(SITE_DIR) $(SLIDES_DIR) --lang zh_CN $(if $(REPO),--repo $(REPO))

# Colab and Binder links in README's notebook table and each notebook's first markdown cell, and
# the address that each notebook's first code cell installs attnlib from where it is missing
# (Colab): all from the repository's address, REPO=OWNER/NAME, else GITHUB_REPOSITORY, else git's
# remote origin (tools/links.py; make site takes it the same way). Idempotent; with no address it
# changes no file and says so. The links open once the student-edition workflow has run on GitHub.
links: $(STAMP)
	$(BIN)/python -m tools.links $(if $(REPO),--repo $(REPO))

# Translations (tools/i18n.py, docs/translation.md): one gettext catalogue per notebook in
# locale/zh_CN/notebooks/, one for README.md (locale/zh_CN/README.po, tools/readme_i18n.py), one
# for the site's, decks' and student edition's own text (locale/zh_CN/site.po, tools/ui.py) and
# one for attnlib's (locale/zh_CN/attnlib.po, compiled into attnlib/locale/, tools/lib_catalogue.py). `make po`
# refreshes them all (new units empty, changed ones fuzzy, removed ones obsolete);
# NB=notebooks/NN_name.ipynb creates that notebook's catalogue.
# `make zh` writes the notebooks with their prose translated and code as in the English but for one
# line (the set-up cell sets attnlib's feedback language), and refuses while a unit is untranslated,
# fuzzy, or breaks a formula, code span or link; then it runs them top to bottom on the path of the
# stored outputs, from notebooks/'s folder (trained models are loaded from the English run's cache),
# and names the cells whose outputs differ from the English. ZH_EXECUTE=0 skips the run (outputs
# then stay the English ones).
ZH_DIR ?= build/zh
ZH_EXECUTE ?= 1
po: $(STAMP)
	$(BIN)/python -m tools.i18n po $(if $(filter %.ipynb,$(NB)),$(NB))
	$(BIN)/python -m tools.readme_i18n po
	$(BIN)/python -c 'from tools import lib_catalogue, ui; print("wrote", lib_catalogue.update("zh_CN")); \
	  print("wrote", ui.update("zh_CN"))'

zh: $(STAMP)
	$(BIN)/python -m tools.i18n build --lang zh_CN --out $(ZH_DIR) $(if $(filter %.ipynb,$(NB)),$(NB))
	$(BIN)/python -m tools.links --lang zh_CN $(if $(REPO),--repo $(REPO)) $(ZH_DIR)
	$(BIN)/python -m tools.readme_i18n build
	$(if $(filter 1,$(ZH_EXECUTE)),$(call PATH_ENV,$(EXECUTE_PATH)) $(BIN)/python -m tools.i18n execute \
	  $(if $(filter %.ipynb,$(NB)),$(ZH_DIR)/$(notdir $(NB)),$(ZH_DIR)))

# The series in a foreign environment, as a student meets it on Colab: a fresh venv with the
# newest torch these machines offer (COMPAT_TORCH; on Linux its CPU build from TORCH_INDEX, as in
# make venv, not PyPI's CUDA build and its NVIDIA packages) and the pins of requirements.txt for
# the rest, but no attnlib. Notebook 01 runs first: its first code cell installs attnlib from a
# copy of the working tree (ATTNLIB_SOURCE), as it would from GitHub, and what that cell prints is
# shown. Then nbval-lax runs every notebook: any error fails, outputs are not compared
# (docs/environment.md says how far they differ). Not part of make test: it installs a second
# environment and takes several minutes.
COMPAT_DIR   ?= build/compat
COMPAT_TORCH ?= 2.14.1
COMPAT_PY     = $(COMPAT_DIR)/venv/bin/python
COMPAT_TORCH_ARGS = $(or $(call torch_from_index,$(COMPAT_TORCH)),torch==$(COMPAT_TORCH))
FIRST_CELL   := import nbformat, sys; nb = nbformat.read(sys.argv[1], 4); cell = next(c for c in nb.cells \
  if c.cell_type == "code"); print("".join(o.get("text") or str(o.get("data", "")) for o in cell.outputs) or "(nothing)")
compat:
	rm -rf $(COMPAT_DIR) && mkdir -p $(COMPAT_DIR)/src
	git ls-files -z -co --exclude-standard | tar --null -T - --ignore-failed-read -cf - | tar -xf - -C $(COMPAT_DIR)/src
	$(PYTHON) -m venv $(COMPAT_DIR)/venv
	$(COMPAT_PY) -m pip install --quiet --disable-pip-version-check $(COMPAT_TORCH_ARGS)
	grep -v -i -E '^(torch|attnlib)==' requirements.txt > $(COMPAT_DIR)/pins.txt
	$(COMPAT_PY) -m pip install --quiet --disable-pip-version-check --no-deps -r $(COMPAT_DIR)/pins.txt
	@cd /tmp && ! $(CURDIR)/$(COMPAT_PY) -c 'import attnlib' 2>/dev/null \
	  || { echo "make compat: attnlib is installed already"; exit 1; }
	@$(COMPAT_PY) -c 'import torch; print(f"make compat: torch {torch.__version__}, no attnlib")'
	cd $(COMPAT_DIR)/src && ATTNLIB_SOURCE=$$PWD ../venv/bin/jupyter nbconvert --to notebook --execute \
	  --ExecutePreprocessor.timeout=600 --output-dir .. notebooks/01_dot_product_attention.ipynb
	@echo "make compat: what the first code cell printed where attnlib was missing:"
	@$(COMPAT_PY) -c '$(FIRST_CELL)' $(COMPAT_DIR)/01_dot_product_attention.ipynb
	@cd /tmp && $(CURDIR)/$(COMPAT_PY) -c 'import attnlib; print(f"make compat: attnlib installed in {attnlib.__file__}")'
	cd $(COMPAT_DIR)/src && ../venv/bin/python -m pytest --nbval-lax --nbval-current-env --nbval-cell-timeout=600 \
	  --no-loadscope-reorder -n 2 --dist loadfile -q notebooks

# Left out of the pins: rfc3987-syntax (and lark, which only it needs), an optional extra of
# jsonschema that jupyter-events asks for. It builds about 35 Earley parsers when imported, which
# is 2.4 s of start-up in every process that imports nbformat (each pytest worker, `make execute`,
# JupyterLab); without it jsonschema skips its IRI format checks, which no Jupyter schema uses
# (python-jsonschema/jsonschema#1428). torch's CPU build is installed first, as in make venv, so
# that the freeze holds no NVIDIA packages.
LOCK_TORCH = $(call torch_from_index,$(patsubst torch==%,%,$(shell grep -io '^torch==[0-9.]*' requirements.in)))
lock:
	rm -rf .lock-venv && $(PYTHON) -m venv .lock-venv
	$(if $(LOCK_TORCH),.lock-venv/bin/python -m pip install --quiet --no-deps $(LOCK_TORCH))
	.lock-venv/bin/python -m pip install --quiet -r requirements.in
	{ echo "# Exact pins that generated the stored notebook outputs (Python 3.11, x86-64 Linux)."; \
	  echo "# Generated by 'make lock' from requirements.in; do not edit by hand."; \
	  .lock-venv/bin/python -m pip freeze --all --exclude pip --exclude-editable \
	    --exclude rfc3987-syntax --exclude lark \
	    | sed -E 's/^torch==([0-9.]+)\+cpu$$/torch==\1/' | LC_ALL=C sort -f; } > requirements.txt
	rm -rf .lock-venv

# requirements-course.txt: what requirements-course.in (nbgrader) adds to requirements.txt, resolved
# against its pins; lark and rfc3987-syntax left out as above (nbgrader never needs them).
lock-course:
	rm -rf .lock-venv && $(PYTHON) -m venv .lock-venv
	grep -v -i '^torch==' requirements.txt > .lock-venv/pins.txt
	.lock-venv/bin/python -m pip install --quiet --no-deps -r .lock-venv/pins.txt
	.lock-venv/bin/python -m pip install --quiet -r requirements-course.in -c .lock-venv/pins.txt
	{ echo "# Exact pins of the nbgrader course's extra packages, installed with requirements.txt into .venv-course."; \
	  echo "# Generated by 'make lock-course' from requirements-course.in; do not edit by hand."; \
	  .lock-venv/bin/python -m pip freeze --all --exclude pip --exclude rfc3987-syntax --exclude lark \
	    | LC_ALL=C sort -f | grep -v -x -F -f .lock-venv/pins.txt; } > requirements-course.txt
	rm -rf .lock-venv

clean:
	rm -rf $(VENV) $(COURSE_VENV) .pytest_cache .ruff_cache build
