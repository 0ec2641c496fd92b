"""The ``openai`` judge backend: an OpenAI-compatible chat endpoint over HTTP, stdlib only.

Speaks ``GET <base_url>/models`` (probed when the backend is built: an endpoint that does not
answer fails the setup, naming the fix) and ``POST <base_url>/chat/completions``, which
``vllm serve`` and ``trl vllm-serve`` (a wrapper around it) both serve. ``base_url`` ends in
``/v1`` as for OpenAI clients. Each request has a time limit (``timeout_s``, on the connection,
the wait for the reply and the whole body); a request over it, a transport error, an HTTP error
status or a reply without ``choices[0].message.content`` is a ``JudgeFailure``.
"""

from __future__ import annotations

import json
import os
import time
import urllib.error
import urllib.request
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from verifiers.judge.backend import JudgeFailure, JudgeSetupError, Messages, register_judge_backend

PROBE_TIMEOUT_S = 10.0
CHUNK = 65536
FIX = "verifier_options.judge.openai"


@dataclass
class OpenAIChatBackend:
    """Greedy replies (``temperature`` 0 by default) from the model a chat server serves."""

    base_url: str = ""
    model: str | None = None  # None: the first model the server lists
    timeout_s: float = 60.0
    max_tokens: int = 256
    temperature: float = 0.0
    api_key_env: str | None = None  # an environment variable holding a bearer token
    concurrency: int = 8  # requests in flight in complete_many

    def __post_init__(self) -> None:
        if not self.base_url.startswith(("http://", "https://")):
            raise JudgeSetupError(
                f"judge backend 'openai' needs {FIX}.base_url=http(s)://<host>:<port>/v1, got {self.base_url!r}"
            )
        if self.timeout_s <= 0 or self.max_tokens < 1 or self.concurrency < 1:
            raise JudgeSetupError(f"{FIX}: timeout_s > 0, max_tokens >= 1 and concurrency >= 1")
        self.base_url = self.base_url.rstrip("/")
        if self.api_key_env and not os.environ.get(self.api_key_env):
            raise JudgeSetupError(
                f"{FIX}.api_key_env={self.api_key_env!r} is not set in the environment; export "
                "it or drop the option for a server without authentication"
            )
        self.model = self._probe()

    @property
    def identity(self) -> str:
        return f"openai:{self.base_url}:{self.model}"

    def _headers(self) -> dict[str, str]:
        headers = {"Content-Type": "application/json"}
        if self.api_key_env:
            headers["Authorization"] = f"Bearer {os.environ[self.api_key_env]}"
        return headers

    def _probe(self) -> str:
        """The served model to ask: ``model`` when the server lists it, else its first one."""
        url = f"{self.base_url}/models"
        try:
            listing = self._request(url, None, min(self.timeout_s, PROBE_TIMEOUT_S))
            served = [str(m["id"]) for m in listing["data"]]
        except JudgeFailure as err:
            raise JudgeSetupError(
                f"judge endpoint {url} does not answer ({err}); start the server (e.g. "
                "`trl vllm-serve --model <judge>` or `vllm serve <judge>`) or fix "
                f"{FIX}.base_url"
            ) from None
        except (KeyError, TypeError):
            raise JudgeSetupError(
                f"judge endpoint {url} is not an OpenAI-compatible server (no model list); "
                f"point {FIX}.base_url at its /v1 root"
            ) from None
        if self.model is None:
            if not served:
                raise JudgeSetupError(f"judge endpoint {url} serves no model")
            return served[0]
        if self.model not in served:
            raise JudgeSetupError(
                f"judge endpoint {url} does not serve {self.model!r} (it serves "
                f"{', '.join(served) or 'nothing'}); fix {FIX}.model"
            )
        return self.model

    def _request(self, url: str, body: dict[str, Any] | None, timeout_s: float) -> Any:
        """GET (no body) or POST JSON; the decoded JSON reply, or ``JudgeFailure``."""
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(url, data=data, headers=self._headers())
        deadline = time.monotonic() + timeout_s
        try:
            with urllib.request.urlopen(request, timeout=timeout_s) as reply:
                chunks = []
                while chunk := reply.read(CHUNK):
                    chunks.append(chunk)
                    if time.monotonic() > deadline:
                        raise TimeoutError
        except urllib.error.HTTPError as err:
            detail = err.read(300).decode("utf-8", errors="replace")
            raise JudgeFailure(f"HTTP {err.code} from {url}: {detail}") from None
        except TimeoutError:
            raise JudgeFailure(f"no reply from {url} within {timeout_s:g} s") from None
        except urllib.error.URLError as err:
            if isinstance(err.reason, TimeoutError):
                raise JudgeFailure(f"no reply from {url} within {timeout_s:g} s") from None
            raise JudgeFailure(f"{url} unreachable: {err.reason}") from None
        except OSError as err:  # connection reset, refused mid-request
            raise JudgeFailure(f"{url}: {type(err).__name__}: {err}") from None
        try:
            return json.loads(b"".join(chunks))
        except ValueError:
            raise JudgeFailure(f"{url} replied with something other than JSON") from None

    def complete(self, messages: Messages) -> str:
        body = {
            "model": self.model,
            "messages": [{"role": m["role"], "content": m["content"]} for m in messages],
            "max_tokens": self.max_tokens,
            "temperature": self.temperature,
        }
        reply = self._request(f"{self.base_url}/chat/completions", body, self.timeout_s)
        try:
            content = reply["choices"][0]["message"]["content"]
        except (KeyError, IndexError, TypeError):
            raise JudgeFailure("chat reply without choices[0].message.content") from None
        if not isinstance(content, str):
            raise JudgeFailure(f"chat reply content is {type(content).__name__}, not text")
        return content

    def complete_many(self, batch: Sequence[Messages]) -> list[str | JudgeFailure]:
        def one(messages: Messages) -> str | JudgeFailure:
            try:
                return self.complete(messages)
            except JudgeFailure as err:
                return err

        with ThreadPoolExecutor(max_workers=min(self.concurrency, max(1, len(batch)))) as pool:
            return list(pool.map(one, batch))


register_judge_backend("openai", OpenAIChatBackend)
