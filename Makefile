# The two commands a newcomer needs: `make demo` and `make test`. Both run `make setup` first, which is
# idempotent: a second run downloads nothing and works offline.
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
SUDO := $(if $(filter 0,$(shell id -u)),,sudo)

.PHONY: setup stack-lock demo test lint docs unit integration faults chromium matrix fuzz rescale discovery python-portable users-job word-count watch flink-matrix file-source

# The Python environment: uv resolves requirements.lock (the whole pinned tree) into .venv/, with bytecode
# compiled at install as pip does (uv does not by default): a cold `splitaudit` run compiles no module from source.
# The checkout installs both of its distributions editable: the product (.) and the lab (lab/).
$(VENV)/.installed: pyproject.toml lab/pyproject.toml requirements.lock
	@echo "==> python environment in $(VENV)/ (requirements.lock)"
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	@$(BIN)/python -m pip install -q uv==0.13.8
	@$(BIN)/uv pip install -q --compile-bytecode --python $(BIN)/python -r requirements.lock
	@$(BIN)/uv pip install -q --python $(BIN)/python --no-deps -e . -e lab
	@$(BIN)/python -m compileall -q splitaudit lab/splitaudit_lab > /dev/null
	@# pyspark comes as an sdist whose every fresh install is a new revision in uv's cache (0.5-1.4 GB built each
	@# time): drop what no revision reaches any more, or each new checkout (every CI run) leaves a build behind.
	@$(BIN)/uv cache prune -q
	@touch $@

# Everything else (Flink distribution, Kafka broker jars, the job jars) goes to .stack/.
setup: $(VENV)/.installed
	@$(BIN)/splitaudit setup

# The stack lock (lab/splitaudit_lab/stack/stack.lock.json), every file setup downloads, resolved anew from
# beam_pipelines/java/stack/*/pom.xml by Maven and from PyPI's index: after changing a pom or a version.
stack-lock: $(VENV)/.installed
	$(BIN)/python tools/stack_lock.py

# Headless Chromium renders the HTML report in the integration tests: Debian's package, installed with apt-get
# (as root, as in CI; through sudo otherwise) when absent. `apt-get update` only when the install fails for
# want of package lists.
chromium: /usr/bin/chromium
/usr/bin/chromium:
	@echo "==> chromium (Debian package, for the HTML report test)"
	@$(SUDO) apt-get install -y -q --no-install-recommends chromium \
		|| { $(SUDO) apt-get update -q && $(SUDO) apt-get install -y -q --no-install-recommends chromium; }

demo: setup
	@$(BIN)/splitaudit demo

lint: $(VENV)/.installed
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy

# The docs site (mkdocs.yml, docs/): strict, so a broken link or a missing page fails; the CLI reference is
# generated from click. Into .site/ (git-ignored).
docs: $(VENV)/.installed
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict --quiet

# The unit tests that need only the Python environment (a fresh checkout: nothing built), with a 10 s fuzz of the
# savepoint reader; `make test` runs them all, the `needs_build` ones and the 100 s fuzz included.
unit: $(VENV)/.installed
	FUZZ_SECONDS=10 $(BIN)/pytest -m "not integration and not needs_build"

integration: setup chromium
	$(BIN)/pytest -m "integration and not matrix and not faults and not rescale and not discovery and not python_portable and not users_job and not watch and not flink_kafka and not flink_file"

# The long fuzz run of the savepoint reader (FUZZ_CASES cases on 2 workers; about 180 cases/s on 2 busy cores).
FUZZ_CASES ?= 1000000
fuzz: $(VENV)/.installed
	$(BIN)/python -m tests.fuzz_savepoints --cases $(FUZZ_CASES) --workers 2

# The real-cluster matrix: every reachable Beam release on its own Flink, stock and patched (about 30 minutes).
matrix: setup
	@$(BIN)/splitaudit setup --matrix
	$(BIN)/pytest -m matrix

# The longer fault runs on the real stack (broker restarts, stock JobManager kill); not part of `make test`.
faults: setup
	$(BIN)/pytest -m faults

# Restores at another parallelism (2 -> 1, 2 -> 3, 4 -> 2) with stock and patched 2.62.0 and Beam 2.70.0, whose jar
# the matrix setup builds; not part of `make test`.
rescale: setup
	@$(BIN)/splitaudit setup --matrix
	$(BIN)/pytest -m integration tests/integration/test_rescale.py

# A topic grown while the job was down, restored by each build (patched, stock 2.62.0, Beam 2.70.0, whose jar the
# matrix setup builds); `make test` runs the patched one.
discovery: setup
	@$(BIN)/splitaudit setup --matrix
	$(BIN)/pytest -m integration tests/integration/test_discovery.py

# The Python pipeline on the portable runner: the restores beyond the default suite's (2 -> 2, 2 -> 3, and the
# splittable-DoFn read's 2 -> 2 and refused 2 -> 1; about 8 minutes on the busy 2-core machine); `make test`
# keeps the deprecated read's 2 -> 1 restore (140-150 s).
python-portable: setup
	$(BIN)/pytest -m python_portable

# The users' job (beam_pipelines/java/users-job) restored with its other consumer configurations (a group with
# commitOffsetsInFinalize, earliest) stock and patched, and with the lineage kit's columns (about 8 minutes);
# `make test` runs stock and patched with no group (latest).
users-job: setup
	$(BIN)/pytest -m users_job tests/integration/test_users_job.py

# The users' job module's word count (WordCountPipeline) restored stock (twin at the log end, the log start, a
# group's reset offsets; processing-time and event-time panes) and patched, each output topic reconciled with
# `audit --aggregate` against a pyarrow truth (8 minutes on the 2-core machine when quiet, about 17 busy);
# `make test` runs the stock restore with no group.
word-count: setup
	$(BIN)/pytest -m integration tests/integration/test_word_count_restore.py

# `splitaudit watch` through a restored job's other ends and faults: cancelled, stopped with a savepoint, REST
# answering 500 while the job stops, REST failing past --rest-timeout, the TaskManager killed idle and while the job
# reads, the job finishing on bounded input, and the users' job with its twin at the log end, stock and patched;
# a JobManager failover and a rescale by the adaptive scheduler, each on a stack of its own (about 6 minutes);
# `make test` runs the stock stop-with-savepoint and the patched cancel.
watch: setup
	$(BIN)/pytest -m watch tests/integration/test_watch_life.py tests/integration/test_watch_recovery.py

# Flink's own KafkaSource job (beam_pipelines/java/flink-jobs) through a topic grown while it was down and while it
# ran, periodic partition discovery off and on, and the SQL job, each judged by guard and audit against its sink
# (about 2.5 minutes); then its restore failures: a bounded job that never finishes, a removed topic read on, a
# re-created topic, starting offsets ignored (about 4 minutes more); the watch over its restores (the SQL job's, a
# dropped source, partitions added while running) and a SQL job's savepoint through every surface (about 10
# minutes); then the same jobs (DynamicKafkaSource included) built for every other connector release (3.4.0-1.20 to 5.0.0-2.2), each on its Flink (1.20.3 to 2.2.1, from `setup --matrix`): clean restores, partitions added while running, a restore at
# another parallelism (about 20 minutes on the busy 2-core machine). `make test` runs the 1.19.3 clean restore.
flink-matrix: setup
	@$(BIN)/splitaudit setup --matrix
	$(BIN)/pytest -m flink_kafka tests/integration/test_flink_kafka_source.py tests/integration/test_flink_kafka_restore_bugs.py \
		tests/integration/test_dynamic_kafka_source.py \
		tests/integration/test_watch_kafka_source.py tests/integration/test_sql_job_savepoint.py \
		tests/integration/test_flink_kafka_matrix.py \
		tests/integration/test_flink_kafka_sinks.py

# Flink's own FileSource job (beam_pipelines/java/flink-jobs) restored rescaled to 1 and 3, bounded, and with a
# file it held or had pending removed, each judged by the savepoint checks and the audit against its sink;
# `make test` runs its clean restore.
file-source: setup
	$(BIN)/pytest -m flink_file tests/integration/test_flink_file_source.py

test: setup lint docs chromium
	$(BIN)/pytest
