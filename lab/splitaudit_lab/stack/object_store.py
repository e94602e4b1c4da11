"""A real S3-compatible object store on 127.0.0.1: S3Proxy serving a directory of the run directory.

S3Proxy (Maven Central `org.gaul:s3proxy`, installed by `splitaudit setup`) speaks the S3 REST API (AWS
signatures v2 and v4, path-style requests) over the jclouds filesystem blobstore: each bucket is a folder of
`<workdir>/data`, each object a file in it. The stack's Flink writes its checkpoints and savepoints there
through its S3 filesystem plugin, and splitaudit reads them back over S3 like any bucket in production.
"""

from __future__ import annotations

import secrets
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path

from splitaudit.errors import ExternalError
from splitaudit.home import S3PROXY_VERSION, s3proxy_libs
from splitaudit_lab.stack import process

BUCKET = "splitaudit"

LOGBACK = """<configuration>
  <appender name="STDOUT" class="ch.qos.logback.core.ConsoleAppender">
    <encoder><pattern>%d{ISO8601} %-5level [%thread] %logger - %msg%n</pattern></encoder>
  </appender>
  <root level="INFO"><appender-ref ref="STDOUT"/></root>
</configuration>
"""


def new_credentials() -> tuple[str, str]:
    """An access key and a secret for one store: random, so no two run directories share them."""
    return f"splitaudit-{secrets.token_hex(4)}", secrets.token_urlsafe(24)


@dataclass(frozen=True)
class ObjectStore:
    """The object store of one run directory: its port, credentials, data folder and process.

    It holds one bucket, `BUCKET`, created (as a folder) before the server starts.
    """

    workdir: Path
    port: int
    access_key: str
    secret_key: str
    bucket: str = BUCKET

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def data_dir(self) -> Path:
        return self.workdir / "data"

    @property
    def pid_file(self) -> Path:
        return self.workdir / "pids" / "s3proxy.pid"

    @property
    def log_file(self) -> Path:
        return self.workdir / "log" / "s3proxy.out"

    def uri(self, *parts: str) -> str:
        """`s3://<bucket>/<parts…>`."""
        return "/".join([f"s3://{self.bucket}", *parts])

    def environment(self) -> dict[str, str]:
        """The standard AWS variables that point a client (splitaudit, pyarrow, the AWS CLI) at this store.

        The checksum settings: AWS SDKs since 2025 send flexible-checksum headers on every request, which
        S3Proxy 2.6.0 answers with 501 NotImplemented; `when_required` sends them only where S3 requires them.
        """
        return {
            "AWS_ENDPOINT_URL": self.endpoint,
            "AWS_ACCESS_KEY_ID": self.access_key,
            "AWS_SECRET_ACCESS_KEY": self.secret_key,
            "AWS_REGION": "us-east-1",
            "AWS_REQUEST_CHECKSUM_CALCULATION": "when_required",
            "AWS_RESPONSE_CHECKSUM_VALIDATION": "when_required",
        }

    def start(self, timeout: float = 120.0) -> process.PidRecord:
        """Start S3Proxy; wait until it answers HTTP on its port."""
        libs = s3proxy_libs()
        if not libs.is_dir():
            raise ExternalError(f"S3Proxy {S3PROXY_VERSION} not found in {libs}; run `splitaudit setup`")
        (self.data_dir / self.bucket).mkdir(parents=True, exist_ok=True)
        tmp = self.workdir / "tmp"
        tmp.mkdir(parents=True, exist_ok=True)
        settings = {
            "s3proxy.endpoint": self.endpoint,
            "s3proxy.authorization": "aws-v2-or-v4",
            "s3proxy.identity": self.access_key,
            "s3proxy.credential": self.secret_key,
            "jclouds.provider": "filesystem",
            "jclouds.filesystem.basedir": str(self.data_dir),
        }
        conf = self.workdir / "s3proxy.conf"
        conf.write_text("".join(f"{key}={value}\n" for key, value in settings.items()))
        conf.chmod(0o600)  # it holds the secret
        # S3Proxy ships no logging configuration, and logback's default logs every request at DEBUG.
        logback = self.workdir / "logback.xml"
        logback.write_text(LOGBACK)
        record = process.spawn(
            "s3proxy",
            [
                process.java_executable(),
                "-Xmx256m",
                f"-Djava.io.tmpdir={tmp}",
                f"-Dlogback.configurationFile={logback}",
                "-cp",
                f"{libs}/*",
                "org.gaul.s3proxy.Main",
                "--properties",
                str(conf),
            ],
            pid_file=self.pid_file,
            log_file=self.log_file,
            cwd=self.workdir,
        )
        process.wait_until(
            f"S3Proxy on {self.endpoint}", self.healthy, timeout=timeout, alive=record, log=self.log_file
        )
        return record

    def stop(self) -> None:
        process.stop(self.pid_file)

    def healthy(self) -> bool:
        """True when the server answers HTTP (an unsigned request is refused with 403: that is an answer)."""
        try:
            with urllib.request.urlopen(self.endpoint, timeout=5):
                return True
        except urllib.error.HTTPError:
            return True
        except OSError:
            return False
