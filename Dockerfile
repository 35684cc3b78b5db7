# LiteLLM proxy image with litellm-kvwarm installed. Pinned to an exact LiteLLM release tag:
# never `latest`/`main-latest` (LiteLLM's 2026-10-21 incident notice: v1.107.0 was compromised
# and those tags pointed at the bad image), and 1.107.* is excluded by the package's pin.
FROM ghcr.io/berriai/litellm-database:main-v1.108.7
WORKDIR /opt/kvwarm
COPY pyproject.toml README.md ./
COPY litellm_kvwarm ./litellm_kvwarm
RUN pip install --no-cache-dir .
WORKDIR /app
