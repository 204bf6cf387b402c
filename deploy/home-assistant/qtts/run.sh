#!/usr/bin/with-contenv bashio
# The App's options (/data/options.json, read through bashio) -> qtts wyoming.
# The model is downloaded into the App's data folder on first start; voices
# registered with `qtts voices add` go in the App's config folder (voices/).
# QTTS_HA_PRINT_ARGS=1 prints the command instead of running it (the lint test).
set -euo pipefail

DATA_DIR="${QTTS_HA_DATA_DIR:-/data}"
CONFIG_DIR="${QTTS_HA_CONFIG_DIR:-/config}"
PORT=10200

# One line per option: how it becomes a flag.
qtts_args() {
    local model threads quant
    model="$(bashio::config 'model')"
    printf '%s\n' wyoming -m "${model}" --host 0.0.0.0 --port "${PORT}" --voices-dir "${CONFIG_DIR}/voices"
    printf '%s\n' --language "$(bashio::config 'language')"
    printf '%s\n' --max-batch "$(bashio::config 'max_batch')"
    threads="$(bashio::config 'threads')"
    if [ "${threads}" != "0" ]; then printf '%s\n' --threads "${threads}"; fi
    quant="$(bashio::config 'quant')"
    if [ "${quant}" != "auto" ]; then printf '%s\n' --quant "${quant}"; fi
    if bashio::config.has_value 'voice'; then printf '%s\n' --voice "$(bashio::config 'voice')"; fi
    if bashio::config.has_value 'instruct'; then printf '%s\n' --instruct "$(bashio::config 'instruct')"; fi
    if bashio::config.true 'debug_logging'; then printf '%s\n' --verbose; fi
}

mapfile -t ARGS < <(qtts_args)
if [ "${QTTS_HA_PRINT_ARGS:-0}" = "1" ]; then
    printf '%s\n' "${ARGS[@]}"
    exit 0
fi

export QTTS_HOME="${DATA_DIR}/models"
mkdir -p "${QTTS_HOME}" "${CONFIG_DIR}/voices"
MODEL="$(bashio::config 'model')"
if [ ! -e "${MODEL}" ]; then
    bashio::log.info "Fetching model ${MODEL} into ${QTTS_HOME} (finished files are kept)"
    qtts download "${MODEL}" --quiet
fi

# Tell Home Assistant where the server is once it accepts connections.
(
    until nc -z 127.0.0.1 "${PORT}" 2>/dev/null; do sleep 1; done
    bashio::discovery "wyoming" "{\"uri\": \"tcp://$(hostname):${PORT}\"}" >/dev/null \
        && bashio::log.info "Announced tcp://$(hostname):${PORT} to Home Assistant"
) &

bashio::log.info "Starting qtts ${ARGS[*]}"
exec qtts "${ARGS[@]}"
