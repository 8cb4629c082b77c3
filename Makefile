# GeoGPT for QGIS: everything a new machine needs, in two commands.
#   make run    QGIS with the plugin, the demo project and the chat dock
#   make test   installs what is missing, starts PostGIS, runs the whole test suite headless
SHELL := /bin/bash
.DEFAULT_GOAL := help

PYTHON := .venv/bin/python
STAMPS := .stamps
DEBIAN_PACKAGES := qgis python3-qgis qgis-providers gdal-bin python3-gdal python3-psycopg2 python3-venv \
	postgresql-15-postgis-3 xvfb xauth
PROFILES := .qgis-profile
export QT_QPA_PLATFORM ?= offscreen

.PHONY: help system setup demo postgis test bench lint run screenshot package clean

help:  ## list the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  make %-11s %s\n", $$1, $$2}'

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

demo/elvbury.gpkg demo/elvbury.qgz &: scripts/make_demo_data.py $(STAMPS)/python-deps
	$(PYTHON) scripts/make_demo_data.py demo

demo: system demo/elvbury.gpkg  ## generate the demo town (GeoPackage + styled project)

setup: system $(STAMPS)/python-deps demo

postgis: system demo  ## start PostgreSQL/PostGIS and load the demo town
	@scripts/postgis.sh

test: setup postgis lint  ## install everything, start PostGIS, lint, run all tests headless
	$(PYTHON) -m pytest

bench: setup postgis  ## benchmarks: start-up, responsiveness, processing, PostGIS, conversations (bench/results.json)
	$(PYTHON) -m bench

lint: $(STAMPS)/python-deps  ## ruff, and Bandit (fails on high-severity findings)
	$(PYTHON) -m ruff check .
	$(PYTHON) -m bandit -q -r geogpt_qgis --severity-level high

run: setup  ## start QGIS with the plugin, the demo project and the chat dock
	$(PYTHON) scripts/plugin_dist.py install --profiles-path $(PROFILES) --profile geogpt
	scripts/run_qgis.sh

screenshot: setup  ## docs/screenshot.png: the dock inside QGIS, under Xvfb
	$(PYTHON) scripts/screenshot.py docs/screenshot.png

package: setup  ## the plugin zip for plugins.qgis.org, in dist/
	$(PYTHON) scripts/plugin_dist.py package dist

clean:  ## remove generated files (keeps the virtual environment)
	rm -rf $(STAMPS) dist build demo/*.gpkg demo/*.qgz .qgis-settings bench/results.json
