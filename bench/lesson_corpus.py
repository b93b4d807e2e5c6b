"""A seeded generator of realistic lesson sentences, for benchmarks and load tests.

Lessons in lamarck are short operational facts an agent learned from an outcome: "Run pytest
from the repo root, not tests/", "prefer `uv pip install` over `pip install` for ...". The
benchmark needs many of them, embedded by the real model, because uniformly random vectors are
HNSW's worst case and say nothing about recall on lessons.

To keep 100k sentences from being near-duplicates of a handful of templates, each sentence
combines a tool profile (its own subcommands, flags, files, error messages and goals) with
shared pools (environments, paths, packages, variables, versions, numbers) and one of many
phrasings, some of which nest a generated condition and fix. Same ``seed`` → same sentences,
in any process (only ``random.Random`` is used, never the salted builtin ``hash``).
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterator
from dataclasses import dataclass

__all__ = ["TOOLS", "Tool", "iter_lesson_sentences", "lesson_sentences", "task_queries"]


@dataclass(frozen=True, slots=True)
class Tool:
    """What lessons about one tool talk about: its commands, flags, files, errors and goals."""

    name: str
    subcommands: tuple[str, ...]
    flags: tuple[str, ...]
    files: tuple[str, ...]
    errors: tuple[str, ...]
    goals: tuple[str, ...]
    alternatives: tuple[str, ...] = ()


# fmt: off
TOOLS: tuple[Tool, ...] = (
    Tool("pytest", ("", "tests/unit", "-k test_login", "--lf", "tests/integration"),
         ("-q", "-x", "--maxfail=1", "-p no:cacheprovider", "--import-mode=importlib", "-n auto",
          "--timeout=60", "-k 'not slow'", "--rootdir=.", "-ra", "--durations=10", "-s"),
         ("conftest.py", "pytest.ini", "pyproject.toml", "tox.ini", ".pytest_cache"),
         ("ImportError while loading conftest", "fixture 'db' not found",
          "ModuleNotFoundError: No module named '{pkg}'", "found no collectors",
          "PytestUnraisableExceptionWarning", "ScopeMismatch: function-scoped fixture",
          "event loop is closed"),
         ("collect the tests", "run a single test", "rerun only the failures",
          "isolate a flaky test", "see print output", "find the slowest tests"),
         ("python -m pytest", "tox -e py311", "nox -s tests")),
    Tool("uv", ("pip install", "sync", "venv", "run", "lock", "add", "pip compile"),
         ("--frozen", "--no-cache", "--python 3.11", "--system", "--offline", "--locked",
          "--index-url", "--no-build-isolation", "--all-extras"),
         ("uv.lock", "pyproject.toml", ".python-version", "requirements.txt"),
         ("No solution found when resolving dependencies", "failed to build {pkg}",
          "the lockfile needs to be updated", "No interpreter found for Python 3.12"),
         ("install dependencies", "pin the interpreter", "refresh the lockfile",
          "create the virtualenv"),
         ("pip install", "poetry install", "pip-compile")),
    Tool("pip", ("install", "install -e .", "install -r requirements.txt", "download", "wheel",
                 "uninstall", "freeze"),
         ("--no-deps", "--user", "--break-system-packages", "--find-links /opt/wheels",
          "--no-build-isolation", "--upgrade", "--require-hashes", "-q", "--pre"),
         ("requirements.txt", "constraints.txt", "setup.py", "pip.conf", "pyproject.toml"),
         ("externally-managed-environment", "Could not find a version that satisfies {pkg}",
          "error: subprocess-exited-with-error", "Failed building wheel for {pkg}",
          "ResolutionImpossible"),
         ("install a package offline", "install the project in editable mode",
          "build wheels", "avoid touching the system Python"),
         ("uv pip install", "pipx install", "python -m pip install")),
    Tool("npm", ("install", "ci", "run build", "run test", "run lint", "publish", "audit fix"),
         ("--legacy-peer-deps", "--omit=dev", "--prefer-offline", "--workspaces",
          "--ignore-scripts", "--no-audit", "--save-exact"),
         ("package.json", "package-lock.json", ".npmrc", "node_modules", "tsconfig.json"),
         ("ERESOLVE unable to resolve dependency tree", "EACCES: permission denied",
          "Cannot find module '{pkg}'", "npm ERR! code ELIFECYCLE", "ENOSPC: no space left"),
         ("install dependencies reproducibly", "build the frontend", "run the unit tests",
          "fix peer dependency conflicts"),
         ("pnpm install", "yarn install", "bun install")),
    Tool("pnpm", ("install", "install --frozen-lockfile", "run build", "-r test", "dlx", "add"),
         ("--filter web", "--frozen-lockfile", "--prefer-offline", "-w", "--shamefully-hoist"),
         ("pnpm-lock.yaml", "pnpm-workspace.yaml", ".npmrc", "package.json"),
         ("ERR_PNPM_OUTDATED_LOCKFILE", "ERR_PNPM_PEER_DEP_ISSUES", "Cannot find module '{pkg}'"),
         ("install the workspace", "build one package of the monorepo",
          "run tests in every package"),
         ("npm ci", "yarn install")),
    Tool("cargo", ("build", "test", "check", "clippy", "fmt", "run", "update", "bench"),
         ("--release", "--locked", "--offline", "--all-features", "--workspace", "-p core",
          "--no-default-features", "--target x86_64-unknown-linux-musl", "-j 2"),
         ("Cargo.toml", "Cargo.lock", ".cargo/config.toml", "rust-toolchain.toml", "target/"),
         ("linker `cc` not found", "failed to select a version for `{pkg}`",
          "could not compile `{pkg}`", "error[E0433]: failed to resolve",
          "Blocking waiting for file lock on package cache"),
         ("build the release binary", "run the test suite", "lint the crate",
          "cross-compile a static binary"),
         ("cargo nextest run", "cross build")),
    Tool("go", ("build ./...", "test ./...", "mod tidy", "vet ./...", "run .", "generate ./...",
                "mod download"),
         ("-race", "-count=1", "-v", "-mod=vendor", "-tags integration", "-trimpath",
          "-run TestHandler", "-timeout 120s"),
         ("go.mod", "go.sum", "vendor/", "Makefile", ".golangci.yml"),
         ("missing go.sum entry for module", "cannot find package", "build constraints exclude all",
          "go: updates to go.mod needed", "race detected during execution of test"),
         ("run the tests without the cache", "vendor the dependencies", "catch data races",
          "build a reproducible binary"),
         ("gotestsum", "golangci-lint run")),
    Tool("docker", ("build .", "compose up", "compose down -v", "run --rm", "push", "buildx build",
                    "system prune", "logs -f"),
         ("--no-cache", "--platform linux/amd64", "--network host", "-v $PWD:/src",
          "--build-arg VERSION", "--pull", "--progress=plain", "-u $(id -u)"),
         ("Dockerfile", "compose.yaml", ".dockerignore", "docker-compose.override.yml"),
         ("permission denied while trying to connect to the Docker daemon socket",
          "no space left on device", "exec format error", "port is already allocated",
          "failed to solve: failed to compute cache key"),
         ("build the image", "start the dev stack", "reset the database volume",
          "build for another architecture"),
         ("podman build", "nerdctl build", "buildah bud")),
    Tool("kubectl", ("apply -f", "rollout status", "logs", "describe pod", "port-forward",
                     "get events", "delete pod", "exec -it"),
         ("-n staging", "--context prod", "--dry-run=server", "--previous", "--all-namespaces",
          "-l app=api", "--timeout=120s", "--server-side"),
         ("kustomization.yaml", "values.yaml", "deployment.yaml", "~/.kube/config"),
         ("CrashLoopBackOff", "ImagePullBackOff", "error: You must be logged in to the server",
          "the server doesn't have a resource type", "OOMKilled", "Forbidden"),
         ("deploy a change", "read logs of a crashed container", "reach a service locally",
          "check a rollout"),
         ("helm upgrade --install", "k9s", "kustomize build")),
    Tool("terraform", ("init", "plan", "apply", "fmt -recursive", "validate", "state list",
                       "import", "workspace select staging"),
         ("-upgrade", "-lock-timeout=60s", "-out=plan.tfplan", "-var-file=prod.tfvars",
          "-target=module.db", "-refresh=false", "-input=false"),
         ("main.tf", "variables.tf", ".terraform.lock.hcl", "backend.tf", "terraform.tfstate"),
         ("Error acquiring the state lock", "Inconsistent dependency lock file",
          "Provider produced inconsistent final plan", "Backend initialization required"),
         ("change infrastructure safely", "upgrade providers", "adopt an existing resource",
          "plan against staging"),
         ("tofu plan", "terragrunt plan")),
    Tool("git", ("pull --rebase", "push", "fetch --prune", "commit", "rebase -i",
                 "submodule update", "lfs pull", "worktree add", "bisect run", "clean -fdx"),
         ("--force-with-lease", "--recurse-submodules", "--depth 1", "--no-verify", "--ff-only",
          "--autostash", "-c core.autocrlf=false"),
         (".gitignore", ".gitmodules", ".gitattributes", ".git/hooks/pre-commit", "CODEOWNERS"),
         ("fatal: not a git repository", "Updates were rejected because the tip of your current "
          "branch is behind", "fatal: refusing to merge unrelated histories",
          "error: cannot lock ref", "detected dubious ownership in repository",
          "LF will be replaced by CRLF"),
         ("update the branch", "publish a rewritten branch", "check out submodules",
          "find the commit that broke the build", "fetch large files"),
         ("gh pr checkout", "git switch")),
    Tool("make", ("", "test", "build", "lint", "install", "clean", "proto", "release"),
         ("-j4", "-B", "-n", "-C build", "V=1", "PREFIX=/usr/local", "-k"),
         ("Makefile", "GNUmakefile", "config.mk", "build/"),
         ("missing separator", "No rule to make target", "recipe for target failed",
          "Nothing to be done for"),
         ("build everything", "see the real compiler command", "regenerate the stubs"),
         ("just", "ninja -C build", "task")),
    Tool("cmake", ("-S . -B build", "--build build", "--install build", "--preset default"),
         ("-DCMAKE_BUILD_TYPE=Release", "-G Ninja", "-DCMAKE_EXPORT_COMPILE_COMMANDS=ON",
          "--parallel 4", "-DBUILD_TESTING=OFF", "--fresh"),
         ("CMakeLists.txt", "CMakePresets.json", "CMakeCache.txt", "build/"),
         ("Could NOT find OpenSSL", "CMake Error: The source directory does not appear to "
          "contain CMakeLists.txt", "No CMAKE_CXX_COMPILER could be found"),
         ("configure an out-of-source build", "build with Ninja", "find a system library"),
         ("meson setup build", "bazel build //...")),
    Tool("mypy", (".", "-p lamarck", "src/", "--install-types"),
         ("--strict", "--ignore-missing-imports", "--follow-imports=silent",
          "--python-version 3.11", "--no-incremental", "--explicit-package-bases"),
         ("mypy.ini", "pyproject.toml", "py.typed", "setup.cfg", ".mypy_cache"),
         ("Cannot find implementation or library stub", "Duplicate module named",
          "Library stubs not installed for", "is not a valid Python package name"),
         ("type-check the package", "check an editable install", "silence untyped third parties"),
         ("pyright", "dmypy run")),
    Tool("ruff", ("check .", "format .", "check --fix .", "format --check ."),
         ("--line-length 100", "--select I", "--unsafe-fixes", "--exclude build",
          "--target-version py311"),
         ("ruff.toml", "pyproject.toml", ".ruff_cache", ".pre-commit-config.yaml"),
         ("E501 Line too long", "I001 Import block is un-sorted", "F401 imported but unused",
          "would reformat"),
         ("lint the code", "sort imports", "format before committing"),
         ("black .", "flake8", "isort .")),
    Tool("eslint", (".", "src", "--fix ."),
         ("--max-warnings 0", "--ext .ts,.tsx", "--cache", "--no-eslintrc", "--quiet"),
         ("eslint.config.js", ".eslintrc.json", ".eslintignore", "package.json"),
         ("Parsing error: Cannot find module 'typescript'", "Definition for rule was not found",
          "ESLint couldn't find a configuration file"),
         ("lint the frontend", "autofix style errors"),
         ("biome check", "oxlint")),
    Tool("tsc", ("--noEmit", "-b", "-p tsconfig.build.json", "--watch"),
         ("--strict", "--skipLibCheck", "--incremental", "--pretty false"),
         ("tsconfig.json", "tsconfig.build.json", "*.d.ts", "tsbuildinfo"),
         ("TS2307: Cannot find module", "TS2322: Type is not assignable",
          "TS5023: Unknown compiler option", "JavaScript heap out of memory"),
         ("type-check the project", "build project references"),
         ("vue-tsc --noEmit", "swc")),
    Tool("jest", ("", "--watch", "--coverage", "src/api"),
         ("--runInBand", "--ci", "--detectOpenHandles", "--testTimeout=20000", "-u",
          "--maxWorkers=2"),
         ("jest.config.js", "babel.config.js", "__snapshots__", "setupTests.ts"),
         ("Jest did not exit one second after the test run has completed",
          "Cannot use import statement outside a module", "Snapshot mismatch",
          "Exceeded timeout of 5000 ms for a test"),
         ("run the frontend tests", "update snapshots", "find open handles"),
         ("vitest run", "mocha")),
    Tool("poetry", ("install", "lock", "add", "run pytest", "build", "export"),
         ("--no-root", "--sync", "--only main", "--no-interaction", "--with dev", "--no-update"),
         ("poetry.lock", "pyproject.toml", "poetry.toml"),
         ("pyproject.toml changed significantly since poetry.lock was last generated",
          "SolverProblemError", "Current Python version is not allowed by the project"),
         ("install the locked dependencies", "export requirements for Docker"),
         ("uv sync", "pdm install")),
    Tool("conda", ("env create -f environment.yml", "install", "activate", "env update",
                   "clean -a"),
         ("-c conda-forge", "--override-channels", "--solver=libmamba", "-y", "--prune"),
         ("environment.yml", ".condarc", "conda-lock.yml"),
         ("Solving environment: failed", "CondaHTTPError", "PackagesNotFoundError",
          "CondaError: Run 'conda init' before 'conda activate'"),
         ("create the environment", "speed up solving", "reclaim disk space"),
         ("mamba install", "micromamba create")),
    Tool("apt-get", ("update", "install", "install --no-install-recommends", "upgrade",
                     "autoremove"),
         ("-y", "-qq", "--fix-missing", "-o Dpkg::Options::=--force-confnew"),
         ("/etc/apt/sources.list", "/etc/apt/sources.list.d", "/var/lib/apt/lists"),
         ("Unable to locate package {pkg}", "Could not get lock /var/lib/dpkg/lock-frontend",
          "E: Release file is not valid yet", "Temporary failure resolving"),
         ("install system libraries", "keep the image small", "install a compiler"),
         ("apt install", "apk add", "dnf install")),
    Tool("brew", ("install", "upgrade", "bundle", "services start", "doctor", "link --force"),
         ("--cask", "--HEAD", "--no-quarantine", "--build-from-source"),
         ("Brewfile", "/opt/homebrew", "/usr/local/Cellar"),
         ("Error: No such keg", "Permission denied @ apply2files", "xcrun: error: invalid active "
          "developer path"),
         ("install command-line tools", "start Postgres as a service"),
         ("port install", "nix profile install")),
    Tool("psql", ("-h localhost -U postgres", "-f schema.sql", "-c '\\dx'", "-d app"),
         ("-v ON_ERROR_STOP=1", "-X", "--set=AUTOCOMMIT=off", "-At", "-1"),
         ("~/.pgpass", "pg_hba.conf", "postgresql.conf", "schema.sql"),
         ("could not connect to server: Connection refused", "role \"postgres\" does not exist",
          "extension \"vector\" is not available", "FATAL: sorry, too many clients already",
          "permission denied for schema public"),
         ("apply a migration", "check installed extensions", "load a dump"),
         ("pgcli", "pg_restore")),
    Tool("redis-cli", ("ping", "info memory", "--scan --pattern", "monitor", "flushdb"),
         ("-p 6380", "-n 2", "--raw", "--tls", "-h 127.0.0.1"),
         ("redis.conf", "dump.rdb", "appendonly.aof"),
         ("Could not connect to Redis at 127.0.0.1:6379: Connection refused",
          "MISCONF Redis is configured to save RDB snapshots", "OOM command not allowed"),
         ("check the cache is up", "find large keys", "inspect memory use"),
         ("valkey-cli", "redis-benchmark")),
    Tool("curl", ("-fsSL", "-X POST", "-I", "--retry 3", "-o /dev/null -w '%{http_code}'"),
         ("--fail-with-body", "--compressed", "--http1.1", "--connect-timeout 5", "-k",
          "--resolve api.local:443:127.0.0.1", "--max-time 30"),
         ("~/.curlrc", "/etc/ssl/certs", "ca-bundle.crt"),
         ("curl: (6) Could not resolve host", "curl: (60) SSL certificate problem",
          "curl: (7) Failed to connect", "curl: (22) The requested URL returned error: 404"),
         ("download a release asset", "probe a health endpoint", "debug TLS"),
         ("wget -q", "httpie", "xh")),
    Tool("ssh", ("-T git@github.com", "-J bastion", "-L 5432:localhost:5432", "-A"),
         ("-o StrictHostKeyChecking=accept-new", "-i ~/.ssh/id_ed25519", "-v",
          "-o ServerAliveInterval=30"),
         ("~/.ssh/config", "~/.ssh/known_hosts", "authorized_keys"),
         ("Permission denied (publickey)", "Host key verification failed",
          "Connection timed out during banner exchange", "Too many authentication failures"),
         ("reach the database through the bastion", "check GitHub access"),
         ("mosh", "tailscale ssh")),
    Tool("systemctl", ("restart", "status", "daemon-reload", "enable --now", "--user start"),
         ("--no-pager", "-l", "--failed", "--now"),
         ("/etc/systemd/system", "unit.service", "~/.config/systemd/user"),
         ("Failed to connect to bus", "Unit not found", "start request repeated too quickly",
          "System has not been booted with systemd"),
         ("restart the service", "reload changed unit files"),
         ("journalctl -u", "service restart")),
    Tool("node", ("index.js", "--test", "--inspect", "dist/server.js"),
         ("--max-old-space-size=4096", "--enable-source-maps", "--experimental-vm-modules",
          "--env-file=.env"),
         ("package.json", ".nvmrc", ".node-version", "node_modules/.bin"),
         ("ERR_REQUIRE_ESM", "ERR_MODULE_NOT_FOUND", "JavaScript heap out of memory",
          "EADDRINUSE: address already in use"),
         ("start the dev server", "debug a memory leak"),
         ("bun run", "deno run", "tsx")),
    Tool("gradle", ("build", "test", "clean", "dependencies", "bootRun", "publish"),
         ("--no-daemon", "--offline", "--stacktrace", "--parallel", "--refresh-dependencies",
          "-x test", "--scan"),
         ("build.gradle.kts", "settings.gradle.kts", "gradle.properties", "gradle/wrapper"),
         ("Could not resolve all files for configuration", "Unsupported class file major version",
          "Gradle daemon disappeared unexpectedly", "Execution failed for task ':compileJava'"),
         ("build the service", "see resolved dependencies", "run the Spring app"),
         ("./gradlew build", "mvn package")),
    Tool("mvn", ("package", "verify", "clean install", "dependency:tree", "test"),
         ("-DskipTests", "-o", "-U", "-B", "-pl api -am", "-T 4"),
         ("pom.xml", "~/.m2/settings.xml", "~/.m2/repository", ".mvn/jvm.config"),
         ("Could not resolve dependencies for project", "Fatal error compiling: invalid target "
          "release", "There are test failures"),
         ("build one module", "build offline", "see the dependency tree"),
         ("./mvnw package", "gradle build")),
    Tool("dotnet", ("build", "test", "restore", "publish", "ef database update", "format"),
         ("-c Release", "--no-restore", "-r linux-x64", "--self-contained",
          "--filter Category=Unit"),
         ("*.csproj", "global.json", "NuGet.Config", "Directory.Build.props"),
         ("NETSDK1045: The current .NET SDK does not support targeting",
          "error NU1101: Unable to find package", "MSB1009: Project file does not exist"),
         ("build the solution", "publish a self-contained binary"),
         ("msbuild", "rider build")),
    Tool("gh", ("pr create", "pr checkout", "run watch", "run rerun --failed", "release create",
                "auth login", "api"),
         ("--fill", "--draft", "--repo org/app", "--web", "--json", "-R org/infra"),
         ("~/.config/gh/hosts.yml", ".github/workflows", "CODEOWNERS"),
         ("HTTP 401: Bad credentials", "GraphQL: Resource not accessible by integration",
          "could not determine base repo", "no pull requests found for branch"),
         ("open a pull request", "watch a CI run", "rerun failed jobs"),
         ("hub pull-request", "glab mr create")),
    Tool("aws", ("s3 sync", "sts get-caller-identity", "ecr get-login-password", "sso login",
                 "logs tail", "ssm start-session"),
         ("--profile staging", "--region eu-west-1", "--no-cli-pager", "--dryrun", "--follow"),
         ("~/.aws/config", "~/.aws/credentials", "samconfig.toml"),
         ("ExpiredToken", "An error occurred (AccessDenied)", "Unable to locate credentials",
          "The SSO session associated with this profile has expired"),
         ("check which account you are in", "push an image to ECR", "tail service logs"),
         ("gcloud", "az")),
    Tool("ffmpeg", ("-i input.mp4", "-ss 00:01:00 -t 30", "-f concat"),
         ("-c copy", "-crf 23", "-vf scale=1280:-2", "-hide_banner", "-y", "-an"),
         ("input.mp4", "list.txt", "out/"),
         ("Unknown encoder 'libx264'", "moov atom not found", "Invalid data found when processing "
          "input"),
         ("cut a clip without re-encoding", "shrink a video", "concatenate segments"),
         ("handbrake-cli", "gst-launch-1.0")),
    Tool("sqlite3", ("app.db", ".schema", ".dump", "'PRAGMA integrity_check'"),
         ("-batch", "-bail", "-readonly", "-cmd '.timeout 5000'"),
         ("app.db", "app.db-wal", "migrations/"),
         ("database is locked", "no such table", "file is not a database",
          "attempt to write a readonly database"),
         ("inspect the schema", "repair a locked database"),
         ("litecli", "duckdb")),
    Tool("pre-commit", ("run --all-files", "install", "autoupdate", "run mypy"),
         ("--hook-stage manual", "--show-diff-on-failure", "-v"),
         (".pre-commit-config.yaml", ".git/hooks/pre-commit", "~/.cache/pre-commit"),
         ("InvalidManifestError", "files were modified by this hook", "An unexpected error has "
          "occurred: CalledProcessError"),
         ("run every hook", "refresh hook versions"),
         ("lefthook run", "husky")),
    Tool("tox", ("", "-e py311", "-e lint", "-p auto", "-r"),
         ("--recreate", "--skip-missing-interpreters", "-q", "--develop"),
         ("tox.ini", "pyproject.toml", ".tox/"),
         ("InterpreterNotFound: python3.10", "ERROR: InvocationError", "could not install deps"),
         ("test every Python version", "rebuild stale environments"),
         ("nox", "hatch run test")),
    Tool("ansible-playbook", ("site.yml", "deploy.yml -l web", "-i inventory.ini"),
         ("--check", "--diff", "-K", "--limit staging", "--tags nginx", "-vvv"),
         ("inventory.ini", "group_vars/all.yml", "ansible.cfg", "roles/"),
         ("UNREACHABLE! Failed to connect to the host via ssh", "Missing sudo password",
          "template error while templating string"),
         ("roll out configuration", "preview a change"),
         ("salt-call state.apply", "pyinfra")),
    Tool("helm", ("upgrade --install", "template", "dependency update", "rollback", "lint"),
         ("--atomic", "--wait", "--values values.prod.yaml", "--namespace api", "--debug",
          "--set image.tag"),
         ("Chart.yaml", "values.yaml", "templates/", "Chart.lock"),
         ("UPGRADE FAILED: another operation is in progress", "rendered manifests contain a "
          "resource that already exists", "found in Chart.yaml, but missing in charts/ directory"),
         ("deploy the chart", "render templates locally", "undo a bad release"),
         ("kubectl apply -k", "helmfile apply")),
    Tool("openssl", ("s_client -connect", "req -new -x509", "x509 -noout -text", "rand -hex 16"),
         ("-servername api.local", "-showcerts", "-days 365", "-nodes"),
         ("cert.pem", "key.pem", "/etc/ssl/openssl.cnf"),
         ("unable to get local issuer certificate", "certificate has expired",
          "wrong version number"),
         ("inspect a server certificate", "make a self-signed certificate"),
         ("step certificate", "mkcert")),
    Tool("rsync", ("-avz", "-a --delete", "--dry-run -av"),
         ("--exclude node_modules", "--partial", "--info=progress2", "-e 'ssh -p 2222'",
          "--checksum"),
         (".rsync-filter", "~/backups"),
         ("rsync: connection unexpectedly closed", "rsync error: some files/attrs were not "
          "transferred", "protocol version mismatch"),
         ("mirror the build output", "copy large files resumably"),
         ("scp -r", "rclone sync")),
    Tool("jq", (".", "-r '.items[].name'", "-s", "--arg"),
         ("-r", "-c", "-e", "--slurp", "--sort-keys"),
         ("response.json", "package.json"),
         ("parse error: Invalid numeric literal", "Cannot index array with string",
          "jq: error: null cannot be parsed"),
         ("extract a field from an API response", "compact JSON for logs"),
         ("yq", "gron")),
    Tool("alembic", ("upgrade head", "revision --autogenerate", "downgrade -1", "stamp head",
                     "history"),
         ("-x env=test", "-c alembic.ini", "--sql"),
         ("alembic.ini", "migrations/env.py", "migrations/versions/"),
         ("Target database is not up to date", "Can't locate revision identified by",
          "Multiple head revisions are present"),
         ("apply migrations", "generate a migration", "merge two heads"),
         ("django-admin migrate", "flyway migrate")),
    Tool("webpack", ("--mode production", "serve", "--config webpack.prod.js"),
         ("--stats errors-only", "--progress", "--watch", "--env analyze"),
         ("webpack.config.js", "babel.config.js", "dist/"),
         ("Module not found: Error: Can't resolve", "Invalid configuration object",
          "digital envelope routines::unsupported"),
         ("build the bundle", "analyse bundle size"),
         ("vite build", "esbuild", "rspack build")),
)
# fmt: on

ENVIRONMENTS = (
    "Ubuntu 22.04", "Ubuntu 24.04", "Debian 12 containers", "Alpine 3.19 images", "macOS on arm64",
    "macOS 14 with Homebrew", "the GitHub Actions ubuntu-latest runner", "WSL2", "Fedora 40",
    "NixOS", "a CI container without network access", "the air-gapped build host",
    "GitLab CI shared runners", "Windows PowerShell", "a rootless Podman container",
    "the dev container", "Amazon Linux 2023", "Raspberry Pi OS", "CentOS Stream 9",
    "a 2-core CI VM", "the staging cluster", "a fresh clone", "a read-only filesystem",
    "machines behind the corporate proxy", "Arch Linux",
)  # fmt: skip

PROJECT_DIRS = (
    "services/api", "services/worker", "packages/web", "packages/ui", "apps/admin", "backend",
    "frontend", "infra/terraform", "deploy/k8s", "cmd/server", "crates/core", "lib", "src",
    "tools/codegen", "docs", "scripts", "internal/store", "plugins/auth", "examples/demo",
    "e2e", "migrations", "proto", "charts/app", "notebooks",
)  # fmt: skip

PACKAGES = (
    "numpy", "pandas", "requests", "psycopg2", "lxml", "cryptography", "grpcio", "torch",
    "pydantic", "sqlalchemy", "uvloop", "orjson", "pillow", "scipy", "matplotlib", "fastapi",
    "lodash", "react", "typescript", "esbuild", "sharp", "node-gyp", "bcrypt", "canvas",
    "prisma", "tokio", "serde", "openssl-sys", "ring", "clap", "libpq", "protobuf",
    "zlib", "libffi", "gdal", "h5py", "pyarrow", "duckdb", "playwright", "selenium",
)  # fmt: skip

ENV_VARS = (
    "PYTHONPATH", "NODE_OPTIONS", "RUSTFLAGS", "GOFLAGS", "CGO_ENABLED", "PGHOST",
    "DATABASE_URL", "REDIS_URL", "HTTPS_PROXY", "NO_PROXY", "LANG", "TZ", "CI", "HOME",
    "XDG_CACHE_HOME", "PIP_INDEX_URL", "UV_CACHE_DIR", "DOCKER_BUILDKIT", "KUBECONFIG",
    "AWS_PROFILE", "JAVA_HOME", "LD_LIBRARY_PATH", "PKG_CONFIG_PATH", "TMPDIR", "OMP_NUM_THREADS",
)  # fmt: skip

VALUES = (
    "1", "0", "C.UTF-8", "UTC", "/tmp/cache", "127.0.0.1", "localhost", "--max-old-space-size=4096",
    "linux/amd64", "false", "true", "2", "/opt/venv", "staging", "en_US.UTF-8",
)  # fmt: skip

USER_ACTIONS = (
    "log in with `gh auth login`", "approve the 2FA prompt on their phone",
    "accept the Xcode license with `sudo xcodebuild -license`", "enter the sudo password",
    "unlock the login keychain", "connect to the VPN", "run `aws sso login` in a browser",
    "add the SSH key to the agent", "grant Full Disk Access to the terminal",
    "confirm the host key fingerprint", "start Docker Desktop", "plug in the hardware key",
    "renew the expired kubeconfig token", "accept the licence in the web console",
    "answer the interactive `git rebase` editor", "allow the firewall prompt",
)  # fmt: skip

CONSEQUENCES = (
    "it rewrites the lockfile", "it leaves stale bytecode behind",
    "the cache is shared between jobs",
    "it pulls a multi-GB CUDA build", "the job hangs waiting for input", "it drops the volume",
    "the tests pass locally and fail in CI", "it silently uses the system interpreter",
    "it corrupts the shared state file", "the build becomes non-reproducible",
    "it times out after ten minutes", "the port stays bound", "it needs root",
    "it deletes untracked files", "the image grows by hundreds of MB",
)  # fmt: skip

VERBS = (
    "check", "pin", "clear", "regenerate", "commit", "rebuild", "restart", "reinstall", "update",
    "inspect", "validate", "format", "back up", "delete", "export",
)  # fmt: skip

TIMES = ("30s", "60s", "90s", "2 minutes", "5 minutes", "10 minutes", "120 seconds")


class _Slots:
    """Random slot values for one sentence, drawn lazily so unused slots cost nothing."""

    def __init__(self, rng: random.Random, tool: Tool) -> None:
        self.rng = rng
        self.t = tool

    def pick(self, items: tuple[str, ...]) -> str:
        return items[self.rng.randrange(len(items))]

    def tool(self) -> str:
        return self.t.name

    def other_tool(self) -> Tool:
        return TOOLS[self.rng.randrange(len(TOOLS))]

    def cmd(self) -> str:
        sub = self.pick(self.t.subcommands)
        parts = [self.t.name, sub] if sub else [self.t.name]
        if self.t.flags and self.rng.random() < 0.5:
            parts.append(self.pick(self.t.flags))
        return " ".join(parts)

    def flag(self) -> str:
        return self.pick(self.t.flags)

    def alt(self) -> str:
        if self.t.alternatives:
            return self.pick(self.t.alternatives)
        return self.cmd()

    def file(self) -> str:
        return self.pick(self.t.files)

    def err(self) -> str:
        return self.pick(self.t.errors).replace("{pkg}", self.pkg())

    def goal(self) -> str:
        return self.pick(self.t.goals)

    def env(self) -> str:
        return self.pick(ENVIRONMENTS)

    def dir(self) -> str:
        d = self.pick(PROJECT_DIRS)
        if self.rng.random() < 0.3:
            d = f"{d}/{self.pick(PROJECT_DIRS).split('/')[-1]}"
        return d

    def pkg(self) -> str:
        return self.pick(PACKAGES)

    def var(self) -> str:
        return self.pick(ENV_VARS)

    def val(self) -> str:
        return self.pick(VALUES)

    def ver(self) -> str:
        return f"{self.rng.randint(0, 5)}.{self.rng.randint(0, 30)}.{self.rng.randint(0, 12)}"

    def num(self) -> int:
        return self.rng.choice((2, 3, 4, 8, 16, 30, 60, 120, 300, 512, 1024, 4096))

    def port(self) -> int:
        return self.rng.choice((3000, 5432, 6379, 8000, 8080, 8443, 9000, 9090, 5173, 50051))

    def time(self) -> str:
        return self.pick(TIMES)

    def user_action(self) -> str:
        return self.pick(USER_ACTIONS)

    def consequence(self) -> str:
        return self.pick(CONSEQUENCES)

    def verb(self) -> str:
        return self.pick(VERBS)

    def condition(self) -> str:
        forms: tuple[Callable[[], str], ...] = (
            lambda: f"the working directory is {self.dir()}",
            lambda: f"it runs inside {self.env()}",
            lambda: f"{self.var()} is unset",
            lambda: f"{self.file()} is older than the last dependency change",
            lambda: "two jobs share the same cache directory",
            lambda: f"{self.pkg()} {self.ver()} is installed",
            lambda: f"port {self.port()} is already taken",
            lambda: "the disk is almost full",
            lambda: f"it runs as root in {self.env()}",
            lambda: f"the network is blocked on {self.env()}",
            lambda: f"{self.dir()} is a git submodule",
            lambda: f"the previous run was killed after {self.time()}",
        )
        return forms[self.rng.randrange(len(forms))]()

    def fix(self) -> str:
        forms: tuple[Callable[[], str], ...] = (
            lambda: f"add `{self.flag()}`",
            lambda: f"delete {self.file()} and run `{self.cmd()}` again",
            lambda: f"pin {self.pkg()} to {self.ver()}",
            lambda: f"run `{self.cmd()}` first",
            lambda: f"export {self.var()}={self.val()}",
            lambda: f"use `{self.alt()}` instead",
            lambda: f"run it from {self.dir()}",
            lambda: f"raise the timeout to {self.time()}",
            lambda: f"install {self.pkg()} with the system package manager first",
            lambda: f"{self.verb()} {self.file()} and retry",
            lambda: f"free port {self.port()} before starting",
            lambda: f"limit it to {self.num()} workers",
        )
        return forms[self.rng.randrange(len(forms))]()


# Each phrasing draws the slots it needs; 40 shapes × per-tool vocabulary × shared pools.
_PHRASINGS: tuple[Callable[[_Slots], str], ...] = (
    lambda c: f"Run {c.tool()} from the repo root, not from {c.dir()}/",
    lambda c: f"Prefer `{c.alt()}` over `{c.cmd()}` to {c.goal()}",
    lambda c: f"prefer `{c.alt()}` over `{c.cmd()}` for {c.dir()} on {c.env()}",
    lambda c: f'`{c.cmd()}` fails with "{c.err()}" when {c.condition()}; {c.fix()}',
    lambda c: f'When {c.tool()} reports "{c.err()}", {c.fix()}.',
    lambda c: f"On {c.env()}, {c.tool()} needs {c.var()}={c.val()} to {c.goal()}",
    lambda c: f"Pass `{c.flag()}` to `{c.cmd()}` in {c.dir()}, otherwise {c.consequence()}",
    lambda c: f"Always {c.verb()} {c.file()} before running `{c.cmd()}`",
    lambda c: f"Never run `{c.cmd()}` on {c.env()}: {c.consequence()}",
    lambda c: f"To {c.goal()}, use `{c.cmd()}`, not `{c.alt()}`: {c.consequence()}",
    lambda c: f"The project keeps its {c.tool()} config in {c.dir()}/{c.file()}, not at the root",
    lambda c: f"If `{c.cmd()}` times out on {c.env()}, raise the limit to {c.time()}",
    lambda c: f"Set {c.var()}={c.val()} before `{c.cmd()}` on {c.env()}",
    lambda c: f'"{c.err()}" from {c.tool()} means {c.condition()}; {c.fix()}',
    lambda c: (
        f"Last time {c.tool()} on {c.dir()} needed the user to {c.user_action()}; "
        f"probe with `{c.cmd()}` first"
    ),
    lambda c: f"{c.tool()} on {c.env()} waits for the user to {c.user_action()}",
    lambda c: f"Use `{c.flag()}` with {c.tool()} in CI; without it {c.consequence()}",
    lambda c: f"{c.tool()} {c.ver()} broke `{c.cmd()}`; {c.fix()}",
    lambda c: f"After editing {c.file()}, rerun `{c.cmd()}` or {c.consequence()}",
    lambda c: f"In {c.dir()}, `{c.cmd()}` must run before `{c.cmd()}`",
    lambda c: f"Don't {c.verb()} {c.file()} by hand; `{c.cmd()}` regenerates it",
    lambda c: f'Clear the {c.tool()} cache on {c.env()} when you see "{c.err()}"',
    lambda c: f"For {c.pkg()} on {c.env()}, `{c.cmd()}` needs the headers: {c.fix()}",
    lambda c: (
        f'Check `{c.cmd()}` exits 0 before trusting the result; it prints "{c.err()}" '
        f"but may still succeed"
    ),
    lambda c: f'The flaky failure "{c.err()}" in {c.dir()} goes away with `{c.flag()}`',
    lambda c: f"`{c.cmd()}` is slow on {c.env()}; limit it to {c.num()} jobs",
    lambda c: (
        f"Bind the dev server to port {c.port()} in {c.dir()}: the default collides with "
        f"{c.other_tool().name}"
    ),
    lambda c: f"{c.tool()} ignores {c.file()} when {c.condition()}",
    lambda c: f"Before `{c.cmd()}`, {c.verb()} {c.file()}; {c.consequence()} otherwise",
    lambda c: f"To {c.goal()} on {c.env()}: `{c.cmd()}`, then `{c.cmd()}`",
    lambda c: (
        f"{c.other_tool().name} and {c.tool()} disagree about {c.var()}; set it explicitly "
        f"to {c.val()}"
    ),
    lambda c: (
        f'Run `{c.cmd()}` with {c.var()}={c.val()} in {c.dir()}; it fails with "{c.err()}" '
        f"otherwise"
    ),
    lambda c: f"Upgrading {c.pkg()} past {c.ver()} makes `{c.cmd()}` fail: {c.fix()}",
    lambda c: f"{c.tool()} on {c.env()} reads {c.file()} from {c.dir()}, so {c.fix()}",
    lambda c: f'Retry `{c.cmd()}` once when it reports "{c.err()}"; a second failure is real',
    lambda c: f"In CI, cache {c.file()} for {c.tool()} keyed on the lockfile",
    lambda c: f"`{c.alt()}` is the reliable way to {c.goal()} in {c.dir()}",
    lambda c: f"Don't use `{c.flag()}` with {c.tool()}: {c.consequence()}",
    lambda c: f"prefer `{c.alt()}` over `{c.cmd()}` when {c.condition()}",
    lambda c: f"Ask before running `{c.cmd()}` on {c.env()}: {c.consequence()}",
)

_QUERY_PHRASINGS: tuple[Callable[[_Slots], str], ...] = (
    lambda c: f"How do I {c.goal()} with {c.tool()} on {c.env()}?",
    lambda c: f'{c.tool()} fails with "{c.err()}" in {c.dir()}',
    lambda c: f"{c.goal()} in {c.dir()}",
    lambda c: f"`{c.cmd()}` is failing on {c.env()}",
    lambda c: f"set up {c.tool()} for {c.dir()} on {c.env()}",
    lambda c: f'fix "{c.err()}"',
    lambda c: f"run `{c.cmd()}` and make the tests pass",
    lambda c: f"{c.tool()} asks for input on {c.env()}",
)


def _generate(n: int, seed: int, phrasings: tuple[Callable[[_Slots], str], ...]) -> Iterator[str]:
    if n < 0:
        raise ValueError(f"n must be >= 0, got {n}")
    rng = random.Random(seed)
    # A store holds each lesson once (content hashes dedupe imports), and exact duplicates
    # would make "the true top 5" ambiguous in the recall benchmark: skip repeats.
    seen: set[str] = set()
    attempts = 0
    while len(seen) < n:
        attempts += 1
        if attempts > 20 * n + 1000:
            raise ValueError(f"cannot generate {n} distinct sentences (got {len(seen)})")
        tool = TOOLS[rng.randrange(len(TOOLS))]
        phrase = phrasings[rng.randrange(len(phrasings))]
        text = phrase(_Slots(rng, tool))
        if text not in seen:
            seen.add(text)
            yield text


def iter_lesson_sentences(n: int, seed: int = 0) -> Iterator[str]:
    """Yield ``n`` distinct lesson sentences, the same ones for the same ``seed``."""
    return _generate(n, seed, _PHRASINGS)


def lesson_sentences(n: int, seed: int = 0) -> list[str]:
    """``n`` distinct, realistic, varied lesson sentences, deterministic in ``seed``."""
    return list(iter_lesson_sentences(n, seed))


def task_queries(n: int, seed: int = 1) -> list[str]:
    """``n`` distinct task descriptions an agent would recall lessons for (benchmark queries)."""
    return list(_generate(n, seed, _QUERY_PHRASINGS))


if __name__ == "__main__":
    import sys

    count = int(sys.argv[1]) if len(sys.argv) > 1 else 20
    for line in lesson_sentences(count, seed=int(sys.argv[2]) if len(sys.argv) > 2 else 0):
        print(line)
