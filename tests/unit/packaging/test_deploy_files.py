"""The deployment files pass the node only real settings with valid values.

No Docker engine or cluster here: the compose file, the Dockerfile and every Kubernetes
manifest are read as data. Each node container's environment and flags go through the node's
own entry point (``lamarck node start``, with the daemon replaced by a recorder), so they are
judged by the same settings model the node uses; every ``LAMARCK_*`` variable must name a
setting (the settings model ignores unknown variables, so a typo would pass silently); every
``lamarck`` command a setup step runs must parse; and every health probe must ask the node's
grpc.health.v1 service about the service the node reports: liveness and the container's
health about the node process (``""``), readiness about admission (``PeerService``).

Across machines: each node listens on every interface and advertises the name its peers dial
(compose: its service name or the operator's, k8s: the pod's DNS name). Secrets only in
Secrets: no password in any file here, no URL carrying one. Metrics on loopback, per-peer
scores off. A NetworkPolicy says who may reach a pod and whom it reaches.
"""

from __future__ import annotations

import importlib.util
import os
import re
import shlex
import socket
from collections.abc import Iterator, Mapping
from pathlib import Path
from types import ModuleType
from typing import Any
from urllib.parse import urlparse

import pytest
import typer
import yaml
from typer.testing import CliRunner

from lamarck.cli import app
from lamarck.net import is_loopback_address
from lamarck.node.api.server import HEALTH_SERVICE, PEER_SERVICE
from lamarck.node.config import NodeSettings

REPO = Path(__file__).resolve().parents[3]
DEPLOY = REPO / "deploy"
K8S = DEPLOY / "k8s"
PROBE_PATH = "/usr/local/lib/lamarck/healthcheck.py"
#: What the downward API and the Secrets would give the pod, for expanding ``$(VAR)``.
POD_FACTS = {"POD_NAME": "lamarck-0", "POD_IP": "10.1.2.3"}
POD_FACTS["POD_NAMESPACE"] = "lamarck"
SECRET_SAMPLE = "s3cret"
#: The whole node's grpc.health.v1 entry: the process is up (liveness).
NODE_HEALTH = ""

runner = CliRunner()


# -- helpers --------------------------------------------------------------------------------


def _settings_of(
    env: Mapping[str, str], flags: list[str], monkeypatch: pytest.MonkeyPatch, home: Path
) -> NodeSettings:
    """The settings ``lamarck node start <flags>`` builds under ``env`` (daemon not run)."""
    unknown = [
        k
        for k in env
        if k.startswith("LAMARCK_") and k[8:].lower() not in NodeSettings.model_fields
    ]
    assert unknown == [], f"not node settings: {unknown}"
    captured: list[NodeSettings] = []
    monkeypatch.setattr("lamarck.node.daemon.run_node", captured.append)
    for name in [k for k in os.environ if k.startswith("LAMARCK_")]:
        monkeypatch.delenv(name)
    # The home is the test's: the container's (/data) holds no lamarck.toml here either; the
    # Secrets' files are the test's too.
    full_env = {**_secret_files(env, home), "LAMARCK_HOME": str(home)}
    result = runner.invoke(app, ["node", "start", *flags], env=full_env)
    assert result.exit_code == 0, f"{flags} {env}: {result.output} {result.exception!r}"
    assert len(captured) == 1
    return captured[0]


def _secret_files(env: Mapping[str, str], home: Path) -> dict[str, str]:
    """``env`` with each ``*_FILE`` secret path replaced by a sample file in ``home``."""
    out = dict(env)
    for key, value in env.items():
        if key.endswith("_PASSWORD_FILE") and value.startswith("/run/secrets/"):
            sample = home / f"secret-{key.lower()}"
            sample.write_text(SECRET_SAMPLE + "\n")
            out[key] = str(sample)
    return out


def _interpolate(value: str) -> str:
    """Compose's ``${VAR:-default}`` with nothing set: the default."""
    return re.sub(r"\$\{\w+:-([^}]*)\}", lambda m: m.group(1), value)


def _port(address: str) -> int:
    return int(address.rpartition(":")[2])


def _lamarck_calls(script: str) -> Iterator[list[str]]:
    """The argument lists of every ``lamarck`` command in a shell script."""
    for line in script.replace("\\\n", " ").splitlines():
        lexer = shlex.shlex(line, posix=True, punctuation_chars=True)
        lexer.whitespace_split = True
        command: list[str] = []
        for token in [*lexer, ";"]:
            # Control operators and keywords end a simple command.
            if token in {";", "|", "||", "&&", ">", ">>", "then", "if", "fi", "else"}:
                if command and command[0] == "lamarck":
                    yield command[1:]
                command = []
            else:
                command.append(token)


def _parses(args: list[str]) -> None:
    """Fail unless ``lamarck <args>`` names a real command with real options."""
    # Typer builds on its own copy of click: walk the groups by their ``commands`` mapping.
    group: Any = typer.main.get_command(app)
    rest = list(args)
    while hasattr(group, "commands"):
        assert rest, f"lamarck {' '.join(args)}: no command"
        sub = group.commands.get(rest[0])
        assert sub is not None, f"lamarck {' '.join(args)}: no command {rest[0]!r}"
        group, rest = sub, rest[1:]
    expanded = [
        a.replace("${POD_NAME}", POD_FACTS["POD_NAME"]).replace("$token", "/tmp/t") for a in rest
    ]
    group.make_context(args[0], expanded)  # raises on an unknown option or bad value


def _expand(value: str, env: Mapping[str, str]) -> str:
    """Kubernetes ``$(VAR)`` expansion."""
    return re.sub(r"\$\((\w+)\)", lambda m: env[m.group(1)], value)


# -- compose --------------------------------------------------------------------------------


def _compose() -> dict[str, Any]:
    data: dict[str, Any] = yaml.safe_load((DEPLOY / "compose.yaml").read_text())
    return data


def _node_services() -> dict[str, dict[str, Any]]:
    services = _compose()["services"]
    nodes = {n: s for n, s in services.items() if s.get("command", [])[:2] == ["node", "start"]}
    assert len(nodes) == 3
    return nodes


def _dockerfile_env() -> dict[str, str]:
    text = (DEPLOY / "Dockerfile").read_text().replace("\\\n", " ")
    env: dict[str, str] = {}
    for line in text.splitlines():
        if line.startswith("ENV "):
            env.update(dict(pair.split("=", 1) for pair in shlex.split(line[4:])))
    return env


def test_compose_runs_postgres_with_pgvector_redis_7_and_three_nodes() -> None:
    services = _compose()["services"]
    assert services["postgres"]["image"] == "pgvector/pgvector:pg16"
    assert services["redis"]["image"].startswith("redis:7")
    for name in ("postgres", "redis", *_node_services()):
        assert "test" in services[name]["healthcheck"], name


@pytest.mark.parametrize("name", ["node1", "node2", "node3"])
def test_each_compose_node_passes_real_settings_with_valid_values(
    name: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    service = _node_services()[name]
    env = {
        **_dockerfile_env(),
        **{k: _interpolate(str(v)) for k, v in service["environment"].items()},
    }
    settings = _settings_of(env, service["command"][2:], monkeypatch, tmp_path)
    # It listens everywhere and advertises the name its peers dial.
    assert settings.listen == "0.0.0.0:7700"
    assert env["LAMARCK_ADVERTISE_ADDRESS"] == f"{service['hostname']}:7700"
    if "advertise_address" in NodeSettings.model_fields:
        assert settings.advertise_address == f"{service['hostname']}:7700"
    assert (
        settings.database_url.startswith("postgresql://") and "@postgres:" in settings.database_url
    )
    # The passwords come from the mounted secrets, never from a URL.
    assert urlparse(settings.database_url).password is None
    assert settings.database_password.get_secret_value() == SECRET_SAMPLE
    assert settings.redis_password.get_secret_value() == SECRET_SAMPLE
    assert set(service["secrets"]) == {"postgres_password", "redis_password"}
    assert is_loopback_address(settings.metrics_listen) and not settings.metrics_peer_scores
    assert urlparse(settings.redis_url).hostname == "redis"
    assert settings.admission == "operator"
    # Each node its own database, and the Postgres init script creates it.
    database = urlparse(settings.database_url).path.lstrip("/")
    assert f"CREATE DATABASE {database};" in (DEPLOY / "postgres-init.sql").read_text()
    # Its home is the volume its enrollment step wrote to.
    assert f"{name}-home:/data" in service["volumes"]
    assert _compose()["services"][f"enroll-{name}"]["volumes"][0] == f"{name}-home:/data"
    assert service["depends_on"][f"enroll-{name}"]["condition"] == "service_completed_successfully"


def test_compose_nodes_are_distinct_and_share_one_network() -> None:
    nodes = _node_services()
    databases = {n["environment"]["LAMARCK_DATABASE_URL"] for n in nodes.values()}
    namespaces = {n["environment"]["LAMARCK_REDIS_NAMESPACE"] for n in nodes.values()}
    assert len(databases) == 3 and len(namespaces) == 1


@pytest.mark.parametrize("name", ["node1", "node2", "node3"])
def test_compose_node_health_checks_ask_whether_the_node_process_is_up(name: str) -> None:
    # Not whether it is admitted: an unenrolled node must not be restarted for waiting.
    service = _node_services()[name]
    test = service["healthcheck"]["test"]
    assert test[:3] == ["CMD", "python", PROBE_PATH]
    args = dict(zip(test[3::2], test[4::2], strict=True))
    assert args["--service"] == NODE_HEALTH
    assert _port(args["--address"]) == _port(service["environment"]["LAMARCK_LISTEN"])


def test_compose_publishes_peer_ports_on_loopback_unless_told_and_keeps_passwords_out() -> None:
    text = (DEPLOY / "compose.yaml").read_text()
    services = _compose()["services"]
    for name, service in _node_services().items():
        peer = [p for p in service["ports"] if p.endswith(":7700")]
        assert peer and _interpolate(peer[0]).startswith("127.0.0.1:"), name
    assert services["postgres"]["environment"]["POSTGRES_PASSWORD_FILE"].startswith("/run/")
    assert "POSTGRES_PASSWORD:" not in text and "requirepass" in text
    assert "--requirepass" not in text  # never on a command line
    assert set(_compose()["secrets"]) == {"postgres_password", "redis_password"}
    assert (DEPLOY / "secrets" / ".gitignore").read_text().split() == ["*", "!.gitignore"]


def test_every_lamarck_command_of_the_setup_steps_parses() -> None:
    services = _compose()["services"]
    scripts = [services[n]["command"][0] for n in ("operator", "enroll-node1")]
    calls = [c for s in scripts for c in _lamarck_calls(s)]
    assert {tuple(c[:2]) for c in calls} >= {
        ("keys", "show"),
        ("keys", "init"),
        ("registry", "enroll"),
        ("registry", "operator-key"),
    }
    for call in calls:
        _parses(call)


def test_the_enrollment_step_writes_a_settings_file_the_node_reads(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    script = _compose()["services"]["enroll-node1"]["command"][0]
    assert "> /data/lamarck.toml" in script and '["config"]' in script
    (tmp_path / "lamarck.toml").write_text('operator_public_key = "' + "A" * 43 + '"\n')
    env = {k: v for k, v in _dockerfile_env().items() if k.startswith("LAMARCK_")}
    settings = _settings_of(env, [], monkeypatch, tmp_path)
    assert settings.operator_public_key == "A" * 43


# -- Dockerfile -----------------------------------------------------------------------------


def test_the_image_runs_as_a_non_root_user_with_its_home_on_a_volume(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    text = (DEPLOY / "Dockerfile").read_text()
    users = re.findall(r"^USER (\S+)", text, re.M)
    assert users and users[-1] not in {"root", "0"}
    env = _dockerfile_env()
    assert re.search(rf'^VOLUME \["{env["LAMARCK_HOME"]}"\]', text, re.M)
    _settings_of(
        {k: v for k, v in env.items() if k.startswith("LAMARCK_")}, [], monkeypatch, tmp_path
    )
    assert re.search(r'^ENTRYPOINT \["lamarck"\]', text, re.M)
    assert re.search(r'^CMD \["node", "start"\]', text, re.M)


def test_the_image_health_check_asks_whether_the_node_process_is_up() -> None:
    text = (DEPLOY / "Dockerfile").read_text().replace("\\\n", " ")
    (line,) = [ln for ln in text.splitlines() if ln.startswith("HEALTHCHECK ")]
    assert f'"{PROBE_PATH}", "--service", "{NODE_HEALTH}"' in line
    assert f"COPY deploy/healthcheck.py {PROBE_PATH}" in text


# -- the probe ------------------------------------------------------------------------------


def _probe() -> ModuleType:
    spec = importlib.util.spec_from_file_location("lamarck_healthcheck", DEPLOY / "healthcheck.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_probe_uses_grpc_health_v1_and_asks_about_the_node_by_default() -> None:
    probe = _probe()
    assert probe.PEER_SERVICE == PEER_SERVICE
    assert probe.NODE_SERVICE == NODE_HEALTH
    assert probe.health_pb2.DESCRIPTOR.services_by_name["Health"].full_name == HEALTH_SERVICE
    assert probe.probe_address("0.0.0.0:7700") == "127.0.0.1:7700"
    assert probe.probe_address("node1:7700") == "node1:7700"


def test_a_setup_command_with_an_unknown_option_is_caught() -> None:
    with pytest.raises(Exception, match="No such option"):
        _parses(["registry", "enroll", "--bogus"])
    with pytest.raises(AssertionError, match="no command"):
        _parses(["registry", "enrol"])


def test_the_probe_fails_when_nothing_answers() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    assert _probe().main(["--address", f"127.0.0.1:{port}"]) == 1


# -- Kubernetes -----------------------------------------------------------------------------


def _manifests() -> list[dict[str, Any]]:
    docs = []
    for path in sorted(K8S.glob("*.yaml")):
        if path.name == "kustomization.yaml":
            continue
        docs += [d for d in yaml.safe_load_all(path.read_text()) if d]
    return docs


def _one(kind: str, name: str | None = None) -> dict[str, Any]:
    found = [
        d
        for d in _manifests()
        if d["kind"] == kind and (name is None or d["metadata"]["name"] == name)
    ]
    assert len(found) == 1, f"{kind} {name}: {len(found)}"
    return found[0]


def test_kustomization_lists_every_manifest() -> None:
    listed = yaml.safe_load((K8S / "kustomization.yaml").read_text())["resources"]
    files = sorted(p.name for p in K8S.glob("*.yaml") if p.name != "kustomization.yaml")
    assert sorted(listed) == files


def test_the_statefulset_keeps_each_nodes_home_on_its_own_claim() -> None:
    sts = _one("StatefulSet")
    spec = sts["spec"]
    claims = {c["metadata"]["name"] for c in spec["volumeClaimTemplates"]}
    pod = spec["template"]["spec"]
    assert pod["securityContext"]["runAsNonRoot"] is True
    (node,) = pod["containers"]
    home = next(e["value"] for e in node["env"] if e["name"] == "LAMARCK_HOME")
    mounts = {m["mountPath"]: m["name"] for m in node["volumeMounts"]}
    assert mounts[home] in claims
    service = _one("Service", spec["serviceName"])
    assert service["spec"]["clusterIP"] == "None"
    assert service["spec"]["selector"] == spec["selector"]["matchLabels"]


#: Secrets the operator creates (secret.yaml says how); no manifest holds their values.
OPERATOR_SECRETS = {"lamarck-postgres", "lamarck-redis", "lamarck-redis-ca", "lamarck-postgres-ca"}


def _container_env(container: Mapping[str, Any]) -> dict[str, str]:
    """The container's environment as the kubelet would set it (samples for refs)."""
    env: dict[str, str] = {}
    for source in container.get("envFrom", []):
        env.update(_one("ConfigMap", source["configMapRef"]["name"])["data"])
    for item in container.get("env", []):
        if "value" in item:
            env[item["name"]] = _expand(item["value"], env)
        elif "secretKeyRef" in item.get("valueFrom", {}):
            ref = item["valueFrom"]["secretKeyRef"]
            assert ref["name"] in OPERATOR_SECRETS, ref
            env[item["name"]] = SECRET_SAMPLE
        else:
            env[item["name"]] = POD_FACTS[item["name"]]
    return env


def test_the_node_container_passes_real_settings_with_valid_values(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    (node,) = _one("StatefulSet")["spec"]["template"]["spec"]["containers"]
    env = _container_env(node)
    assert node["args"][:2] == ["node", "start"]
    settings = _settings_of(env, node["args"][2:], monkeypatch, tmp_path)
    assert settings.listen == "0.0.0.0:7700"
    # The pod's DNS name under the headless Service, which its peers resolve.
    service = _one("StatefulSet")["spec"]["serviceName"]
    advertised = f"{POD_FACTS['POD_NAME']}.{service}.{POD_FACTS['POD_NAMESPACE']}.svc"
    assert env["LAMARCK_ADVERTISE_ADDRESS"] == f"{advertised}.cluster.local:7700"
    database = urlparse(settings.database_url)
    assert database.path == f"/{POD_FACTS['POD_NAME']}"
    assert database.password is None and "sslmode=verify-full" in database.query
    assert settings.database_password.get_secret_value() == SECRET_SAMPLE
    redis = urlparse(settings.redis_url)
    assert redis.scheme == "rediss" and redis.password is None and settings.redis_ca_file
    assert settings.redis_password.get_secret_value() == SECRET_SAMPLE
    ports = {p["name"]: p["containerPort"] for p in node["ports"]}
    assert ports["peer"] == _port(settings.listen)
    assert ports["agent"] == _port(settings.agent_listen)
    assert "metrics" not in ports and is_loopback_address(settings.metrics_listen)
    assert not settings.metrics_peer_scores
    mounts = {m["mountPath"] for m in node["volumeMounts"]}
    assert str(Path(settings.redis_ca_file).parent) in mounts


def test_the_node_container_is_alive_when_its_process_is_and_ready_when_admitted() -> None:
    """The kubelet's gRPC probe speaks no TLS: it asks the agent port's health service,
    which serves the same health as the peer port (mutual TLS)."""
    (node,) = _one("StatefulSet")["spec"]["template"]["spec"]["containers"]
    agent_port = next(p["containerPort"] for p in node["ports"] if p["name"] == "agent")
    for probe in ("startupProbe", "livenessProbe"):
        assert node[probe]["grpc"] == {"port": agent_port, "service": NODE_HEALTH}, probe
    assert node["readinessProbe"]["grpc"] == {"port": agent_port, "service": PEER_SERVICE}


def test_no_manifest_holds_a_password_or_a_url_carrying_one() -> None:
    for path in [*DEPLOY.glob("*.yaml"), *K8S.glob("*.yaml"), DEPLOY / "Dockerfile"]:
        text = path.read_text()
        assert not re.search(r"://[^/\s:@]+:[^/\s@]+@", text), path  # user:password@host
        assert "change-me" not in text, path
    for secret in [d for d in _manifests() if d["kind"] == "Secret"]:
        assert not secret.get("data") and not secret.get("stringData"), secret["metadata"]


def test_a_network_policy_admits_peers_and_labelled_agents_only() -> None:
    policy = _one("NetworkPolicy")
    sts = _one("StatefulSet")
    assert policy["spec"]["podSelector"] == sts["spec"]["selector"]
    assert set(policy["spec"]["policyTypes"]) == {"Ingress", "Egress"}
    ingress = {
        p["port"]: rule.get("from") for rule in policy["spec"]["ingress"] for p in rule["ports"]
    }
    assert set(ingress) == {7700, 7701}
    assert ingress[7701] == [{"podSelector": {"matchLabels": {"lamarck.dev/agent": "true"}}}]
    egress = {p["port"] for rule in policy["spec"]["egress"] for p in rule["ports"]}
    assert egress == {53, 5432, 6380, 7700}
    service_ports = {p["port"] for p in _one("Service")["spec"]["ports"]}
    assert service_ports == {7700, 7701}


def test_the_enrollment_secret_reaches_the_home_through_the_init_container() -> None:
    pod = _one("StatefulSet")["spec"]["template"]["spec"]
    volumes = {v["name"]: v for v in pod["volumes"]}
    secret = _one("Secret", "lamarck-enrollment")
    (init,) = pod["initContainers"]
    mounts = {m["name"]: m["mountPath"] for m in init["volumeMounts"]}
    enrollment = next(n for n, v in volumes.items() if v.get("secret", {}).get("secretName"))
    assert volumes[enrollment]["secret"]["secretName"] == secret["metadata"]["name"]
    script = init["args"][0]
    assert mounts[enrollment] in script and "/data/enrollment.json" in script
    home = next(e["value"] for e in init["env"] if e["name"] == "LAMARCK_HOME")
    assert mounts["home"] == home == "/data"
    calls = list(_lamarck_calls(script))
    assert {tuple(c[:2]) for c in calls} == {("keys", "show"), ("keys", "init")}
    for call in calls:
        _parses(call)
