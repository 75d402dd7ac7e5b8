# bench/llm_steps.sh — section 4 of bench/run.sh, sourced by it (its helpers and
# variables): `llm` steps against the local OpenAI-compatible server
# (bench_llm_server, else bench/llm_server.py) answering after 20 ms, -j 16,
# against the ideal and against `curl --parallel` in the same invocation. Not run
# on its own.
# --- 4. llm steps against the local fake provider -------------------------------------
if want 4; then
banner "4. $llm_steps llm steps, local provider answering after ${llm_delay_ms} ms, -j $llm_jobs"
if ((have_orch)); then
  echo "server: ${llm_server[*]}"
  "${llm_server[@]}" --port-file "$work/llm.port" --delay-ms "$llm_delay_ms" >"$work/llm.log" 2>&1 &
  background+=($!)
  disown "$!"  # killed by cleanup; no "Killed" notice from bash
  for _ in $(seq 100); do [[ -s "$work/llm.port" ]] && break; sleep 0.1; done
  if [[ -s "$work/llm.port" ]]; then
    export ORCH_BENCH_LLM_KEY=bench-key
    cat >"$work/models.yaml" <<MODELS
providers:
  fake: {api: openai, base_url: "http://127.0.0.1:$(cat "$work/llm.port")/v1", api_key_env: ORCH_BENCH_LLM_KEY, concurrency: $llm_jobs}
models:
  bench: {provider: fake, model: bench, max_tokens: 16}
default_model: bench
MODELS
    python3 - "$work/llm.yaml" "$llm_steps" <<'PLAN'
import sys
path, steps = sys.argv[1], int(sys.argv[2])
with open(path, "w") as f:
    f.write("name: llm-bench\nsteps:\n")
    for i in range(steps):
        f.write('  - {id: s%d, executor: llm, inputs: {prompt: "say ok (%d)"}}\n' % (i, i))
PLAN
    # The baseline, in the same invocation: the same requests sent by the curl
    # command-line tool (libcurl's multi interface, as orch uses it) at the same
    # concurrency, with no ledger, plan or process start-up per call. It shows
    # what this machine and server allow; the target stays against the ideal.
    python3 - "$work/curl.cfg" "$llm_steps" "$(cat "$work/llm.port")" <<'CURLCFG'
import json, sys
path, steps, port = sys.argv[1], int(sys.argv[2]), sys.argv[3]
with open(path, "w") as f:
    for i in range(steps):
        body = {"model": "bench", "max_tokens": 16,
                "messages": [{"role": "user", "content": "say ok (%d)" % i}]}
        if i:
            f.write("next\n")  # options after `next` apply to the next request only
        f.write('url = "http://127.0.0.1:%s/v1/chat/completions"\n' % port)
        f.write('header = "Authorization: Bearer bench-key"\n')
        f.write('header = "Content-Type: application/json"\n')
        f.write("data = %s\n" % json.dumps(json.dumps(body)))
        f.write('output = "/dev/null"\nfail\n')
CURLCFG
    curl_secs=""
    if have curl; then
      printf -v curl_cmd 'curl -s --no-progress-meter --parallel --parallel-immediate --parallel-max %d -K %s' "$llm_jobs" \
        "$(q "$work/curl.cfg")"
      if curl_secs=$(measure curl-llm "" "$curl_cmd"); then
        ideal=$(calc "int(($llm_steps + $llm_jobs - 1) / $llm_jobs) * $llm_delay_ms / 1000")
        note "$(printf '%-28s %9.3f s   ideal %.3f s   %sx   (baseline)' "curl --parallel ($llm_steps, $llm_jobs)" \
          "$curl_secs" "$ideal" "$(calc "$curl_secs / $ideal" "%.2f")")"
      else
        note "curl baseline: FAILED (see $work/curl-llm.out)"; failures=$((failures + 1)); curl_secs=""
      fi
    else
      note "curl baseline: skipped (no curl command; scripts/install-deps.sh installs it)"
    fi
    printf -v llm_prep 'rm -rf %s' "$(q "$work/llm-store")"
    printf -v llm_cmd '%s run %s -j %d --store %s --workspace %s --models %s' "$(q "$orch")" "$(q "$work/llm.yaml")" \
      "$llm_jobs" "$(q "$work/llm-store/orch.db")" "$(q "$work")" "$(q "$work/models.yaml")"
    if secs=$(measure orch-llm "$llm_prep" "$llm_cmd"); then
      ideal=$(calc "int(($llm_steps + $llm_jobs - 1) / $llm_jobs) * $llm_delay_ms / 1000")
      ratio=$(calc "$secs / $ideal" "%.2f")
      note "$(printf '%-28s %9.3f s   ideal %.3f s   %sx   target <= %sx   %s' "orch llm ($llm_steps, -j $llm_jobs)" \
        "$secs" "$ideal" "$ratio" "$target_llm_ratio" "$(judge "$ratio" "<=" "$target_llm_ratio")")"
      if [[ -n "$curl_secs" ]]; then
        note "$(printf '%-28s %9s     %sx the curl baseline' "" "" "$(calc "$secs / $curl_secs" "%.2f")")"
      fi
    else
      note "orch llm steps: FAILED (see $work/orch-llm.out)"; failures=$((failures + 1))
    fi
  else
    note "orch llm steps: FAILED (the fake provider did not start: $(tail -n 3 "$work/llm.log"))"
    failures=$((failures + 1))
  fi
else
  note "orch llm steps: skipped (no orch binary)"
fi
fi
