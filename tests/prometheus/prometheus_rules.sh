#!/usr/bin/env bash
# prometheus_rules: conf/prometheus's rules load (promtool check rules), each alert fires on
# the series that mean it and not on healthy ones (promtool test rules drover.tests.yml), the
# Grafana dashboard is JSON whose queries name only recorded or exported series, and every
# drover_* series the rules, their tests and the dashboard name is one droverd exports (a
# name the C sources write), so that a renamed metric breaks this test, not the alerts.
# Usage: prometheus_rules.sh SOURCE_DIR
set -euo pipefail
src=$(cd "$1" && pwd)
dir=$src/conf/prometheus
command -v promtool > /dev/null || { echo "FAIL: promtool is missing (scripts/deps: prometheus)" >&2; exit 1; }
cd "$dir"
promtool check rules drover.rules.yml
promtool test rules drover.tests.yml
jq -e '.panels | length > 0' grafana-dashboard.json > /dev/null || { echo "FAIL: grafana-dashboard.json" >&2; exit 1; }

fails=0
# Series the dashboard uses that are recorded: each must be a record of drover.rules.yml.
for r in $(jq -r '.panels[].targets[].expr' grafana-dashboard.json | grep -o 'drover:[a-z0-9_:]*' | sort -u); do
  grep -q "record: $r\$" drover.rules.yml || { echo "FAIL: the dashboard uses $r, which no rule records" >&2; fails=$((fails + 1)); }
done
# Exported series (histograms' _bucket, _count and _sum by their family's name).
names=$({
  grep -o 'drover_[a-z0-9_]*' drover.rules.yml drover.tests.yml | cut -d: -f2
  jq -r '.panels[].targets[].expr' grafana-dashboard.json | grep -o 'drover_[a-z0-9_]*'
} | sed -E 's/_(bucket|count|sum)$//' | sort -u)
for n in $names; do
  grep -rqw --include='*.c' -- "$n" "$src/src" || { echo "FAIL: $n is not a series droverd exports (src/)" >&2; fails=$((fails + 1)); }
done
[ "$fails" = 0 ] || exit 1
echo "ok: $(echo "$names" | wc -w) exported series named by the rules and the dashboard, all exported"
