"""The RebalancePolicy CRD's openAPIV3Schema, as data (generated: do not edit).

Written by hack/gen-policy-schema from crds/rebalancepolicy.yaml; a unit test checks the two are
equal. respread.inputs.structural applies it as the API server does (pruning, nulls, defaults, types
and bounds); the CRD's CEL rules are respread.inputs.policy's own checks.
"""

from typing import Any

_DOMAINS_MAX_OR_MIN: dict[str, Any] = {
    "properties": {"name": {"maxLength": 253, "type": "string"}, "pods": {"type": "integer"}},
    "type": "object",
}

_WORKLOAD: dict[str, Any] = {
    "properties": {
        "kind": {"maxLength": 253, "type": "string"},
        "name": {"maxLength": 253, "type": "string"},
    },
    "type": "object",
}

_POLICY: dict[str, Any] = {
    "description": "As in a pod's topologySpreadConstraints.",
    "enum": ["Honor", "Ignore"],
    "type": "string",
}

_ITEMS_MAX_SKEW_OR_MIN_DOMAINS: dict[str, Any] = {
    "description": "As in a pod's topologySpreadConstraints.",
    "format": "int32",
    "maximum": 2147483647,
    "minimum": 1,
    "type": "integer",
}

_SELECTOR_FIELDS: dict[str, Any] = {
    "matchExpressions": {
        "items": {
            "properties": {
                "key": {"maxLength": 317, "minLength": 1, "type": "string"},
                "operator": {"enum": ["In", "NotIn", "Exists", "DoesNotExist"], "type": "string"},
                "values": {
                    "items": {"maxLength": 63, "type": "string"},
                    "maxItems": 256,
                    "type": "array",
                },
            },
            "required": ["key", "operator"],
            "type": "object",
            "x-kubernetes-validations": [
                {
                    "message": "values must be non-empty for In and NotIn, and empty for Exists and DoesNotExist",
                    "rule": "self.operator in ['In', 'NotIn'] ? has(self.values) && size(self.values) > 0 : !has(self.values) || size(self.values) == 0",
                }
            ],
        },
        "maxItems": 32,
        "type": "array",
    },
    "matchLabels": {"additionalProperties": {"maxLength": 63, "type": "string"}, "type": "object"},
}

_INTERVAL_OR_READY_TIMEOUT_RULES: list[Any] = [
    {
        "message": "must be at least 10s",
        "rule": "!self.matches(r'^([0-9]+(\\.[0-9]+)?(h|ms|m|s))+$') || duration(self) >= duration('10s')",
    }
]

SCHEMA: dict[str, Any] = {
    "description": "RebalancePolicy configures respread: which workloads are scanned for Pod Topology Spread Constraint violations, how often, and whether (and how carefully) pods are evicted so the scheduler places their replacements where the constraints want them.",
    "properties": {
        "apiVersion": {"type": "string"},
        "kind": {"type": "string"},
        "metadata": {"type": "object"},
        "spec": {
            "default": {},
            "properties": {
                "constraints": {
                    "default": {},
                    "description": "Which topology spread constraints are rebalanced.",
                    "properties": {
                        "defaultConstraints": {
                            "default": [],
                            "description": "The scheduler's cluster-level default constraints (PodTopologySpread plugin args), applied to pods that have none of their own. They take their selector from the pod's workload, so labelSelector is not allowed.",
                            "items": {
                                "properties": {
                                    "labelSelector": {
                                        "description": "Not allowed: a default constraint takes its selector from the pod's workload.",
                                        "type": "object",
                                        "x-kubernetes-preserve-unknown-fields": True,
                                    },
                                    "matchLabelKeys": {
                                        "description": "Not allowed (it needs labelSelector); an empty list is accepted.",
                                        "items": {"maxLength": 317, "type": "string"},
                                        "maxItems": 32,
                                        "type": "array",
                                    },
                                    "maxSkew": _ITEMS_MAX_SKEW_OR_MIN_DOMAINS,
                                    "minDomains": _ITEMS_MAX_SKEW_OR_MIN_DOMAINS,
                                    "nodeAffinityPolicy": _POLICY,
                                    "nodeTaintsPolicy": _POLICY,
                                    "topologyKey": {
                                        "description": "As in a pod's topologySpreadConstraints.",
                                        "maxLength": 317,
                                        "minLength": 1,
                                        "type": "string",
                                    },
                                    "whenUnsatisfiable": {
                                        "description": "As in a pod's topologySpreadConstraints.",
                                        "enum": ["DoNotSchedule", "ScheduleAnyway"],
                                        "type": "string",
                                    },
                                },
                                "required": ["maxSkew", "topologyKey", "whenUnsatisfiable"],
                                "type": "object",
                                "x-kubernetes-validations": [
                                    {
                                        "fieldPath": ".labelSelector",
                                        "message": "labelSelector is not allowed: default constraints take their selector from the pod's workload",
                                        "rule": "!has(self.labelSelector)",
                                    },
                                    {
                                        "fieldPath": ".matchLabelKeys",
                                        "message": "matchLabelKeys requires labelSelector, which is not allowed here",
                                        "rule": "!has(self.matchLabelKeys) || size(self.matchLabelKeys) == 0",
                                    },
                                    {
                                        "fieldPath": ".minDomains",
                                        "message": "minDomains may only be set with whenUnsatisfiable DoNotSchedule",
                                        "rule": "!has(self.minDomains) || self.whenUnsatisfiable == 'DoNotSchedule'",
                                    },
                                ],
                            },
                            "maxItems": 16,
                            "type": "array",
                            "x-kubernetes-list-map-keys": ["topologyKey", "whenUnsatisfiable"],
                            "x-kubernetes-list-type": "map",
                        },
                        "emptySelectorMatchesAll": {
                            "default": False,
                            "description": "Count every pod of the namespace for a constraint whose labelSelector is {}. kube-scheduler v1.27 to v1.35 count none (false matches them).",
                            "type": "boolean",
                        },
                        "whenUnsatisfiable": {
                            "default": ["DoNotSchedule"],
                            "description": "Constraints of these kinds are rebalanced; add ScheduleAnyway to rebalance soft constraints too.",
                            "items": {
                                "enum": ["DoNotSchedule", "ScheduleAnyway"],
                                "type": "string",
                            },
                            "minItems": 1,
                            "type": "array",
                        },
                    },
                    "type": "object",
                },
                "eviction": {
                    "default": {},
                    "description": "Limits and protections for evictions (Enforce mode).",
                    "properties": {
                        "cooldown": {
                            "default": "10m",
                            "description": "No second eviction from a workload within this time (a Go duration).",
                            "maxLength": 32,
                            "pattern": "^([0-9]+(\\.[0-9]+)?(h|ms|m|s))+$",
                            "type": "string",
                        },
                        "gracePeriodSeconds": {
                            "description": "The eviction's grace period; null uses each pod's own terminationGracePeriodSeconds.",
                            "format": "int64",
                            "minimum": 0,
                            "nullable": True,
                            "type": "integer",
                        },
                        "maxPerNamespace": {
                            "description": "At most this many evictions per namespace per scan; null means no cap.",
                            "minimum": 0,
                            "nullable": True,
                            "type": "integer",
                        },
                        "maxPerNode": {
                            "description": "At most this many evictions per node per scan; null means no cap.",
                            "minimum": 0,
                            "nullable": True,
                            "type": "integer",
                        },
                        "maxPerRun": {
                            "default": 10,
                            "description": "At most this many evictions per scan; null means no cap.",
                            "minimum": 0,
                            "nullable": True,
                            "type": "integer",
                        },
                        "maxPerWorkload": {
                            "default": 1,
                            "description": "At most this many evictions per workload per scan; null means no cap.",
                            "minimum": 0,
                            "nullable": True,
                            "type": "integer",
                        },
                        "minPodAge": {
                            "default": "5m",
                            "description": "Pods younger than this are never evicted (a Go duration).",
                            "maxLength": 32,
                            "pattern": "^([0-9]+(\\.[0-9]+)?(h|ms|m|s))+$",
                            "type": "string",
                        },
                        "protections": {
                            "default": {},
                            "description": "Pods that are never evicted.",
                            "properties": {
                                "localStorage": {
                                    "default": True,
                                    "description": 'Pods with emptyDir or hostPath volumes (unless annotated respread.io/evict: "true").',
                                    "type": "boolean",
                                },
                                "persistentVolumeClaims": {
                                    "default": False,
                                    "description": "Pods mounting a PersistentVolumeClaim.",
                                    "type": "boolean",
                                },
                                "systemCritical": {
                                    "default": True,
                                    "description": "Pods of priority class system-cluster-critical or system-node-critical.",
                                    "type": "boolean",
                                },
                            },
                            "type": "object",
                        },
                        "requireFit": {
                            "default": True,
                            "description": "Evict only if the replacement is predicted to fit somewhere better.",
                            "type": "boolean",
                        },
                    },
                    "type": "object",
                },
                "mode": {
                    "default": "DryRun",
                    "description": "DryRun only reports; Enforce also evicts.",
                    "enum": ["DryRun", "Enforce"],
                    "type": "string",
                },
                "outages": {
                    "default": {},
                    "description": "Domain outages: a domain (one value of a topology key) whose nodes are all NotReady or tainted node.kubernetes.io/unreachable or not-ready for longer than gracePeriod is reported as an outage, and no eviction is made on its account (workloads spread over it are held). counting: Scheduler judges the spread as kube-scheduler does today (the domain counts while it has nodes); KEP5980 follows KEP-5980 (the domain counts toward minDomains, not toward skew), so the survivors are judged among themselves.",
                    "properties": {
                        "counting": {
                            "default": "Scheduler",
                            "description": "How a domain in an outage counts: Scheduler, as kube-scheduler counts it today (toward skew and minDomains while it has nodes); KEP5980, toward minDomains only, so the surviving domains are judged among themselves.",
                            "enum": ["Scheduler", "KEP5980"],
                            "type": "string",
                        },
                        "gracePeriod": {
                            "default": "5m",
                            "description": "How long every node of a domain must be down (a Go duration).",
                            "maxLength": 32,
                            "pattern": "^([0-9]+(\\.[0-9]+)?(h|ms|m|s))+$",
                            "type": "string",
                        },
                        "recovery": {
                            "default": {},
                            "description": "When an outage ends and the domain is back, workloads with a violated group over it are moved back in steps: at most maxShare percent of a workload's pods (at least one) per step, one step per interval.",
                            "properties": {
                                "interval": {
                                    "default": "5m",
                                    "description": "The time between two steps of a recovery (a Go duration).",
                                    "maxLength": 32,
                                    "pattern": "^([0-9]+(\\.[0-9]+)?(h|ms|m|s))+$",
                                    "type": "string",
                                },
                                "maxShare": {
                                    "default": 25,
                                    "description": "The most of a workload's pods moved back per step, in percent (at least one pod).",
                                    "maximum": 100,
                                    "minimum": 1,
                                    "type": "integer",
                                },
                            },
                            "type": "object",
                        },
                    },
                    "type": "object",
                },
                "remediation": {
                    "default": {},
                    "description": "Which remedies respread may use. The default is eviction alone. Every remedy is reported in DryRun and acted on only in Enforce.",
                    "properties": {
                        "deletionCost": {
                            "default": {},
                            "description": "Keep controller.kubernetes.io/pod-deletion-cost on the pods of Deployments and ReplicaSets so that the next scale-in removes pods in an order that keeps every hard spread constraint within maxSkew. StatefulSets, DaemonSets and bare pods are never given costs.",
                            "properties": {
                                "enabled": {
                                    "default": False,
                                    "description": "Turn deletion-cost ordering on.",
                                    "type": "boolean",
                                },
                                "maxPatchesPerScan": {
                                    "default": 50,
                                    "description": "At most this many pod patches per scan.",
                                    "maximum": 1000,
                                    "minimum": 1,
                                    "type": "integer",
                                },
                                "takeOver": {
                                    "default": False,
                                    "description": "Also write costs where another field manager owns the annotation (false: report the conflict and leave the ReplicaSet alone).",
                                    "type": "boolean",
                                },
                            },
                            "type": "object",
                        },
                        "evict": {
                            "default": True,
                            "description": "Fix violations by evicting misplaced pods (false: plan and report the evictions as deferred, never evict).",
                            "type": "boolean",
                        },
                        "surge": {
                            "default": {},
                            "description": "Surge moves (make before break): for a violated Deployment, raise spec.replicas by the moves needed, wait until the new pods are Ready, give the pods in the crowded domains the lowest pod-deletion-cost and scale back. No budget is consumed and availability never drops below the original count. Skipped for paused Deployments, rollouts in progress, GitOps-managed Deployments and (unless allowAutoscaled) those an HPA targets. See docs/surge.md.",
                            "properties": {
                                "allowAutoscaled": {
                                    "default": False,
                                    "description": "Also surge Deployments a HorizontalPodAutoscaler targets.",
                                    "type": "boolean",
                                },
                                "enabled": {
                                    "default": False,
                                    "description": "Turn surge moves on.",
                                    "type": "boolean",
                                },
                                "maxSurge": {
                                    "default": 3,
                                    "description": "At most this many extra replicas per Deployment.",
                                    "maximum": 100,
                                    "minimum": 1,
                                    "type": "integer",
                                },
                                "readyTimeout": {
                                    "default": "5m",
                                    "description": "How long the new pods have to become Ready (a Go duration, at least 10s); past it the surge is rolled back.",
                                    "maxLength": 64,
                                    "pattern": "^([0-9]+(\\.[0-9]+)?(h|ms|m|s))+$",
                                    "type": "string",
                                    "x-kubernetes-validations": _INTERVAL_OR_READY_TIMEOUT_RULES,
                                },
                                "when": {
                                    "default": "WhenEvictionBlocked",
                                    "description": "WhenEvictionBlocked: only where eviction cannot fix the violation (budgets, caps, protections); Always: surge rather than evict.",
                                    "enum": ["WhenEvictionBlocked", "Always"],
                                    "type": "string",
                                },
                            },
                            "type": "object",
                        },
                    },
                    "type": "object",
                },
                "report": {
                    "default": {},
                    "description": "How much the status holds.",
                    "properties": {
                        "maxItems": {
                            "default": 20,
                            "description": "At most this many violations and plan entries in the status.",
                            "maximum": 500,
                            "minimum": 1,
                            "type": "integer",
                        }
                    },
                    "type": "object",
                },
                "schedule": {
                    "default": {"interval": "5m"},
                    "description": "When to scan: every `interval` (a Go duration, at least 10s), and soon after the cluster changes (the operator's --scan-on-change), or only on a five-field `cron` expression. Exactly one of the two.",
                    "properties": {
                        "cron": {
                            "description": "Five fields (minute hour day-of-month month day-of-week), read as cron(8) reads them, in UTC.",
                            "maxLength": 128,
                            "type": "string",
                            "x-kubernetes-validations": [
                                {
                                    "message": 'must be a five-field cron expression such as "*/10 * * * *" (minute 0-59, hour 0-23, day of month 1-31, month 1-12 or jan-dec, day of week 0-7 or sun-sat; lists, ranges and /steps after * or a range allowed)',
                                    "rule": "self.matches(\n  r'^\\s*' +  // minute 0-59\n  r'((\\*(/0*[1-9][0-9]{0,17})?|0*([0-9]|[1-5][0-9])(-0*([0-9]|[1-5][0-9])(/0*[1-9][0-9]{0,17})?)?),)*(\\*(/0*[1-9][0-9]{0,17})?|0*([0-9]|[1-5][0-9])(-0*([0-9]|[1-5][0-9])(/0*[1-9][0-9]{0,17})?)?)' +\n  r'\\s+' +  // hour 0-23\n  r'((\\*(/0*[1-9][0-9]{0,17})?|0*([0-9]|1[0-9]|2[0-3])(-0*([0-9]|1[0-9]|2[0-3])(/0*[1-9][0-9]{0,17})?)?),)*(\\*(/0*[1-9][0-9]{0,17})?|0*([0-9]|1[0-9]|2[0-3])(-0*([0-9]|1[0-9]|2[0-3])(/0*[1-9][0-9]{0,17})?)?)' +\n  r'\\s+' +  // day of month 1-31\n  r'((\\*(/0*[1-9][0-9]{0,17})?|0*([1-9]|[12][0-9]|3[01])(-0*([1-9]|[12][0-9]|3[01])(/0*[1-9][0-9]{0,17})?)?),)*(\\*(/0*[1-9][0-9]{0,17})?|0*([1-9]|[12][0-9]|3[01])(-0*([1-9]|[12][0-9]|3[01])(/0*[1-9][0-9]{0,17})?)?)' +\n  r'\\s+' +  // month 1-12 or jan-dec\n  r'((\\*(/0*[1-9][0-9]{0,17})?|(0*([1-9]|1[0-2])|([jJ][aA][nN]|[fF][eE][bB]|[mM][aA][rR]|[aA][pP][rR]|[mM][aA][yY]|[jJ][uU][nN]|[jJ][uU][lL]|[aA][uU][gG]|[sS][eE][pP]|[oO][cC][tT]|[nN][oO][vV]|[dD][eE][cC]))(-(0*([1-9]|1[0-2])|([jJ][aA][nN]|[fF][eE][bB]|[mM][aA][rR]|[aA][pP][rR]|[mM][aA][yY]|[jJ][uU][nN]|[jJ][uU][lL]|[aA][uU][gG]|[sS][eE][pP]|[oO][cC][tT]|[nN][oO][vV]|[dD][eE][cC]))(/0*[1-9][0-9]{0,17})?)?),)*(\\*(/0*[1-9][0-9]{0,17})?|(0*([1-9]|1[0-2])|([jJ][aA][nN]|[fF][eE][bB]|[mM][aA][rR]|[aA][pP][rR]|[mM][aA][yY]|[jJ][uU][nN]|[jJ][uU][lL]|[aA][uU][gG]|[sS][eE][pP]|[oO][cC][tT]|[nN][oO][vV]|[dD][eE][cC]))(-(0*([1-9]|1[0-2])|([jJ][aA][nN]|[fF][eE][bB]|[mM][aA][rR]|[aA][pP][rR]|[mM][aA][yY]|[jJ][uU][nN]|[jJ][uU][lL]|[aA][uU][gG]|[sS][eE][pP]|[oO][cC][tT]|[nN][oO][vV]|[dD][eE][cC]))(/0*[1-9][0-9]{0,17})?)?)' +\n  r'\\s+' +  // day of week 0-7 or sun-sat\n  r'((\\*(/0*[1-9][0-9]{0,17})?|(0*[0-7]|([sS][uU][nN]|[mM][oO][nN]|[tT][uU][eE]|[wW][eE][dD]|[tT][hH][uU]|[fF][rR][iI]|[sS][aA][tT]))(-(0*[0-7]|([sS][uU][nN]|[mM][oO][nN]|[tT][uU][eE]|[wW][eE][dD]|[tT][hH][uU]|[fF][rR][iI]|[sS][aA][tT]))(/0*[1-9][0-9]{0,17})?)?),)*(\\*(/0*[1-9][0-9]{0,17})?|(0*[0-7]|([sS][uU][nN]|[mM][oO][nN]|[tT][uU][eE]|[wW][eE][dD]|[tT][hH][uU]|[fF][rR][iI]|[sS][aA][tT]))(-(0*[0-7]|([sS][uU][nN]|[mM][oO][nN]|[tT][uU][eE]|[wW][eE][dD]|[tT][hH][uU]|[fF][rR][iI]|[sS][aA][tT]))(/0*[1-9][0-9]{0,17})?)?)' +\n  r'\\s*$')",
                                },
                                {
                                    "message": "a range in the cron expression runs backwards (such as 5-3)",
                                    "rule": "self.findAll('[0-9A-Za-z]+-[0-9A-Za-z]+').all(r,\n  (r.split('-')[0].lowerAscii().matches('^0*[0-9]{1,18}$') ? int(r.split('-')[0].lowerAscii())\n   : 'janfebmaraprmayjunjulaugsepoctnovdec'.indexOf(r.split('-')[0].lowerAscii()) >= 0\n     ? 'janfebmaraprmayjunjulaugsepoctnovdec'.indexOf(r.split('-')[0].lowerAscii()) / 3 + 1\n     : 'sunmontuewedthufrisat'.indexOf(r.split('-')[0].lowerAscii()) / 3)\n  <= (r.split('-')[1].lowerAscii().matches('^0*[0-9]{1,18}$') ? int(r.split('-')[1].lowerAscii())\n      : 'janfebmaraprmayjunjulaugsepoctnovdec'.indexOf(r.split('-')[1].lowerAscii()) >= 0\n        ? 'janfebmaraprmayjunjulaugsepoctnovdec'.indexOf(r.split('-')[1].lowerAscii()) / 3 + 1\n        : 'sunmontuewedthufrisat'.indexOf(r.split('-')[1].lowerAscii()) / 3))",
                                },
                            ],
                        },
                        "interval": {
                            "description": "A Go duration (90s, 5m, 1h30m), at least 10s.",
                            "maxLength": 32,
                            "pattern": "^([0-9]+(\\.[0-9]+)?(h|ms|m|s))+$",
                            "type": "string",
                            "x-kubernetes-validations": _INTERVAL_OR_READY_TIMEOUT_RULES,
                        },
                    },
                    "type": "object",
                    "x-kubernetes-validations": [
                        {
                            "message": "set exactly one of interval and cron",
                            "rule": "has(self.interval) != has(self.cron)",
                        }
                    ],
                },
                "selector": {
                    "default": {},
                    "description": "Which namespaces are scanned and which pods may be evicted.",
                    "properties": {
                        "namespaceSelector": {
                            "description": "A label selector on Namespace objects; absent means every namespace.",
                            "properties": _SELECTOR_FIELDS,
                            "type": "object",
                            "x-kubernetes-map-type": "atomic",
                        },
                        "namespaces": {
                            "default": {},
                            "description": "Namespaces selected by name.",
                            "properties": {
                                "exclude": {
                                    "default": ["kube-system"],
                                    "description": "Namespaces never scanned.",
                                    "items": {"maxLength": 63, "minLength": 1, "type": "string"},
                                    "type": "array",
                                },
                                "include": {
                                    "default": [],
                                    "description": "Namespaces to scan; empty means all.",
                                    "items": {"maxLength": 63, "minLength": 1, "type": "string"},
                                    "type": "array",
                                },
                            },
                            "type": "object",
                        },
                        "podSelector": {
                            "description": "A label selector limiting which pods may be evicted (every matching pod is still counted); absent means every pod.",
                            "properties": _SELECTOR_FIELDS,
                            "type": "object",
                            "x-kubernetes-map-type": "atomic",
                        },
                    },
                    "type": "object",
                },
            },
            "type": "object",
        },
        "status": {
            "description": "The last scan's report, bounded: the lists hold at most spec.report.maxItems entries, worst first, with their full lengths in violationsTotal and planTotal.",
            "properties": {
                "conditions": {
                    "items": {
                        "properties": {
                            "lastTransitionTime": {"format": "date-time", "type": "string"},
                            "message": {"maxLength": 1024, "type": "string"},
                            "observedGeneration": {
                                "format": "int64",
                                "minimum": 0,
                                "type": "integer",
                            },
                            "reason": {"maxLength": 1024, "type": "string"},
                            "status": {"enum": ["True", "False", "Unknown"], "type": "string"},
                            "type": {"maxLength": 316, "type": "string"},
                        },
                        "required": ["type", "status"],
                        "type": "object",
                    },
                    "maxItems": 8,
                    "type": "array",
                    "x-kubernetes-list-map-keys": ["type"],
                    "x-kubernetes-list-type": "map",
                },
                "cooldowns": {
                    "description": "Workloads respread evicted from recently, so that a restarted or newly elected operator keeps their cooldown, loop protection and back-off: those still in cooldown, with an eviction whose effect on the skew is still to be judged, or backed off. The most recent evictions first.",
                    "items": {
                        "properties": {
                            "backoffLevel": {
                                "description": "Consecutive evictions that did not reduce the skew (at most 6).",
                                "maximum": 64,
                                "minimum": 0,
                                "type": "integer",
                            },
                            "backoffUntil": {"format": "date-time", "type": "string"},
                            "lastEvictionTime": {"format": "date-time", "type": "string"},
                            "namespace": {"maxLength": 63, "type": "string"},
                            "pendingReview": {
                                "description": "The skew each constraint had when the last eviction was made.",
                                "items": {
                                    "properties": {
                                        "skewAtEviction": {"type": "integer"},
                                        "topologyKey": {"maxLength": 317, "type": "string"},
                                    },
                                    "type": "object",
                                },
                                "maxItems": 8,
                                "type": "array",
                            },
                            "workload": _WORKLOAD,
                        },
                        "required": ["namespace", "workload"],
                        "type": "object",
                    },
                    "maxItems": 500,
                    "type": "array",
                },
                "deletionCost": {
                    "description": "What the last scan did with pod-deletion-cost (spec.remediation.deletionCost): costs written, taken back (removed, or handed over to another policy that writes costs), left alone (conflicts: another field manager owns them; overlaps: another RebalancePolicy orders them, with at most 10 of those ReplicaSets in overlapping), skipped (the pod changed since the scan), failed, left for later scans by maxPatchesPerScan, and the live pods whose cost this policy wrote (managed).",
                    "properties": {
                        "conflicts": {"minimum": 0, "type": "integer"},
                        "failed": {"minimum": 0, "type": "integer"},
                        "handedOver": {"minimum": 0, "type": "integer"},
                        "leftForLaterScans": {"minimum": 0, "type": "integer"},
                        "managed": {"minimum": 0, "type": "integer"},
                        "overlapping": {
                            "items": {
                                "properties": {
                                    "namespace": {"maxLength": 63, "type": "string"},
                                    "pods": {"minimum": 0, "type": "integer"},
                                    "policy": {"maxLength": 253, "type": "string"},
                                    "replicaSet": {"maxLength": 253, "type": "string"},
                                },
                                "type": "object",
                            },
                            "maxItems": 10,
                            "type": "array",
                        },
                        "overlaps": {"minimum": 0, "type": "integer"},
                        "removed": {"minimum": 0, "type": "integer"},
                        "skipped": {"minimum": 0, "type": "integer"},
                        "written": {"minimum": 0, "type": "integer"},
                    },
                    "type": "object",
                },
                "domainPhases": {
                    "description": "Domains in an outage, recovering from one (workloads moved back in steps, spec.outages.recovery), or back to Normal (said once).",
                    "items": {
                        "properties": {
                            "domain": {"maxLength": 63, "type": "string"},
                            "phase": {"enum": ["Outage", "Recovering", "Normal"], "type": "string"},
                            "since": {"format": "date-time", "nullable": True, "type": "string"},
                            "topologyKey": {"maxLength": 317, "type": "string"},
                            "workloads": {"type": "integer"},
                            "workloadsAtStart": {"type": "integer"},
                        },
                        "type": "object",
                    },
                    "maxItems": 500,
                    "type": "array",
                },
                "evictedTotal": {
                    "description": "Evictions performed since the policy was created (each scan adds its own; summary.evicted holds the last scan's).",
                    "minimum": 0,
                    "type": "integer",
                },
                "lastScanTime": {"format": "date-time", "type": "string"},
                "lostDomains": {
                    "description": "Domains a workload held (eligible domains of its constraints, hostname excepted) whose last node went, not in an outage: since when, and whether its minDomains is now unmet.",
                    "items": {
                        "properties": {
                            "domain": {"maxLength": 63, "type": "string"},
                            "eligibleDomains": {"type": "integer"},
                            "minDomains": {"type": "integer"},
                            "minDomainsUnmet": {"type": "boolean"},
                            "namespace": {"maxLength": 63, "type": "string"},
                            "since": {"format": "date-time", "type": "string"},
                            "topologyKey": {"maxLength": 317, "type": "string"},
                            "workload": _WORKLOAD,
                        },
                        "type": "object",
                    },
                    "maxItems": 500,
                    "type": "array",
                },
                "nextEvictionTime": {
                    "description": "When the first eviction left for later by the cooldown or a back-off is due; absent when none waits for one.",
                    "format": "date-time",
                    "type": "string",
                },
                "observedGeneration": {"format": "int64", "type": "integer"},
                "outages": {
                    "description": "Domains whose nodes are all NotReady or unreachable past spec.outages.gracePeriod: no eviction is made on their account.",
                    "items": {
                        "properties": {
                            "domain": {"maxLength": 63, "type": "string"},
                            "nodeCount": {"type": "integer"},
                            "nodes": {
                                "description": "The first 20 of its nodes (nodeCount says how many).",
                                "items": {"maxLength": 253, "type": "string"},
                                "maxItems": 20,
                                "type": "array",
                            },
                            "since": {"format": "date-time", "nullable": True, "type": "string"},
                            "topologyKey": {"maxLength": 317, "type": "string"},
                        },
                        "type": "object",
                    },
                    "maxItems": 500,
                    "type": "array",
                },
                "pending": {
                    "description": "Unbound pods that topology spread holds Pending: the binding constraint, the domains it admits the pod into, why none takes it (Full, Cordoned, Tainted, NodeAffinity, PinnedByVolume, OtherConstraint, Gone), and what would unblock it.",
                    "items": {
                        "properties": {
                            "domains": {
                                "items": {"maxLength": 63, "type": "string"},
                                "maxItems": 10,
                                "type": "array",
                            },
                            "message": {"maxLength": 1024, "type": "string"},
                            "namespace": {"maxLength": 63, "type": "string"},
                            "pod": {"maxLength": 253, "type": "string"},
                            "reason": {
                                "enum": [
                                    "Full",
                                    "Cordoned",
                                    "Tainted",
                                    "NodeAffinity",
                                    "PinnedByVolume",
                                    "OtherConstraint",
                                    "Gone",
                                ],
                                "type": "string",
                            },
                            "topologyKey": {"maxLength": 317, "type": "string"},
                            "unblock": {"maxLength": 1024, "type": "string"},
                            "workload": _WORKLOAD,
                        },
                        "type": "object",
                    },
                    "maxItems": 500,
                    "type": "array",
                },
                "pendingTotal": {
                    "description": "The number of pods spread holds Pending (status.pending may hold fewer).",
                    "minimum": 0,
                    "type": "integer",
                },
                "plan": {
                    "description": "The evictions of the last scan, in order, then those left for later.",
                    "items": {
                        "properties": {
                            "deferredBy": {
                                "description": "For Deferred entries, the cap, cooldown or budget.",
                                "maxLength": 1024,
                                "type": "string",
                            },
                            "fromDomain": {
                                "additionalProperties": {"maxLength": 63, "type": "string"},
                                "description": "The pod's value of each of its topology keys.",
                                "maxProperties": 16,
                                "type": "object",
                            },
                            "namespace": {"maxLength": 63, "type": "string"},
                            "node": {"maxLength": 253, "type": "string"},
                            "pod": {"maxLength": 253, "type": "string"},
                            "predictedNode": {"maxLength": 253, "type": "string"},
                            "reason": {"maxLength": 1024, "type": "string"},
                            "state": {
                                "enum": ["Planned", "Deferred", "Evicted", "Blocked", "Failed"],
                                "type": "string",
                            },
                            "toDomain": {
                                "additionalProperties": {"maxLength": 63, "type": "string"},
                                "description": "Where the replacement is predicted to land.",
                                "maxProperties": 16,
                                "type": "object",
                            },
                            "workload": _WORKLOAD,
                        },
                        "type": "object",
                    },
                    "maxItems": 500,
                    "type": "array",
                },
                "planTotal": {
                    "description": "The number of plan entries (status.plan may hold fewer).",
                    "minimum": 0,
                    "type": "integer",
                },
                "returnedDomains": {
                    "description": "Lost domains that came back with this scan.",
                    "items": {
                        "properties": {
                            "domain": {"maxLength": 63, "type": "string"},
                            "lostSince": {
                                "format": "date-time",
                                "nullable": True,
                                "type": "string",
                            },
                            "namespace": {"maxLength": 63, "type": "string"},
                            "topologyKey": {"maxLength": 317, "type": "string"},
                            "workload": _WORKLOAD,
                        },
                        "type": "object",
                    },
                    "maxItems": 500,
                    "type": "array",
                },
                "summary": {
                    "properties": {
                        "blocked": {"minimum": 0, "type": "integer"},
                        "constraintGroups": {"minimum": 0, "type": "integer"},
                        "deferredEvictions": {"minimum": 0, "type": "integer"},
                        "evicted": {"minimum": 0, "type": "integer"},
                        "failed": {"minimum": 0, "type": "integer"},
                        "nodes": {"minimum": 0, "type": "integer"},
                        "partlyFixable": {
                            "description": "Violations eviction reduces but cannot fix; not counted in unfixable.",
                            "minimum": 0,
                            "type": "integer",
                        },
                        "pendingPods": {
                            "description": "Pods held Pending by a spread constraint (no node passes the scheduler's spread filter).",
                            "minimum": 0,
                            "type": "integer",
                        },
                        "plannedEvictions": {"minimum": 0, "type": "integer"},
                        "pods": {"minimum": 0, "type": "integer"},
                        "skipped": {"minimum": 0, "type": "integer"},
                        "unfixable": {"minimum": 0, "type": "integer"},
                        "violations": {"minimum": 0, "type": "integer"},
                        "waiting": {
                            "description": "Violations eviction fixes once holds lift (minPodAge, budgets whose pods are not all healthy yet); not counted in unfixable.",
                            "minimum": 0,
                            "type": "integer",
                        },
                    },
                    "type": "object",
                },
                "surges": {
                    "description": "Surge moves (spec.remediation.surge): those in flight (state: their phase, Surging, Marking, Draining or RollingBack), planned, and skipped with the reason. The state of an operation itself is kept on its Deployment (annotation respread.io/surge-operation).",
                    "items": {
                        "properties": {
                            "namespace": {"maxLength": 63, "type": "string"},
                            "reason": {"maxLength": 1024, "type": "string"},
                            "replicas": {"type": "integer"},
                            "state": {
                                "enum": [
                                    "Planned",
                                    "Skipped",
                                    "Surging",
                                    "Marking",
                                    "Draining",
                                    "RollingBack",
                                    "RolledBack",
                                ],
                                "type": "string",
                            },
                            "targetReplicas": {"type": "integer"},
                            "workload": _WORKLOAD,
                        },
                        "type": "object",
                    },
                    "maxItems": 500,
                    "type": "array",
                },
                "violations": {
                    "description": "The worst violations first.",
                    "items": {
                        "properties": {
                            "cause": {
                                "enum": [
                                    "ScaleDown",
                                    "NodeLoss",
                                    "NodeAdded",
                                    "RollingUpdate",
                                    "TooFewDomains",
                                    "Unknown",
                                ],
                                "type": "string",
                            },
                            "causeMessage": {"maxLength": 1024, "type": "string"},
                            "domains": {
                                "description": "The eligible domains, the fullest and the emptiest.",
                                "properties": {
                                    "count": {"type": "integer"},
                                    "max": _DOMAINS_MAX_OR_MIN,
                                    "min": _DOMAINS_MAX_OR_MIN,
                                },
                                "type": "object",
                            },
                            "fixable": {"type": "boolean"},
                            "fromDefaultConstraints": {"type": "boolean"},
                            "globalMinimum": {"type": "integer"},
                            "incomplete": {
                                "description": "Present and true when the group was counted without pods bound to nodes the scan does not know (condition InputComplete).",
                                "type": "boolean",
                            },
                            "matchLabels": {
                                "additionalProperties": {"maxLength": 63, "type": "string"},
                                "description": "Only for a constraint with matchLabelKeys: the pairs they added to its selector, which make this group one of several of its workload (a rollout's ReplicaSets, by pod-template-hash).",
                                "maxProperties": 64,
                                "type": "object",
                            },
                            "maxSkew": {"type": "integer"},
                            "message": {"maxLength": 1024, "type": "string"},
                            "minDomains": {"type": "integer"},
                            "minimumMoves": {"nullable": True, "type": "integer"},
                            "namespace": {"maxLength": 63, "type": "string"},
                            "pods": {"type": "integer"},
                            "remedy": {
                                "description": "The remedy chosen for it (spec.remediation): Evict, DeletionCost or Surge; absent when none that the policy allows applies.",
                                "enum": ["Evict", "DeletionCost", "Surge"],
                                "type": "string",
                            },
                            "since": {"format": "date-time", "type": "string"},
                            "skew": {"type": "integer"},
                            "topologyKey": {"maxLength": 317, "type": "string"},
                            "verdict": {
                                "description": "The one verdict the plan, the remedies and the summary share: Fixable (evictions now and in later runs fix it), Waiting (they will once minPodAge or a budget's unhealthy pods stop holding its pods), PartlyFixable (they leave fewer pods misplaced, not none) or NotFixable.",
                                "enum": ["Fixable", "Waiting", "PartlyFixable", "NotFixable"],
                                "type": "string",
                            },
                            "violatingPods": {"type": "integer"},
                            "violatingPodsAfterRun": {"type": "integer"},
                            "whenUnsatisfiable": {
                                "enum": ["DoNotSchedule", "ScheduleAnyway"],
                                "type": "string",
                            },
                            "workload": _WORKLOAD,
                        },
                        "type": "object",
                    },
                    "maxItems": 500,
                    "type": "array",
                },
                "violationsTotal": {
                    "description": "The number of violations found (status.violations may hold fewer).",
                    "minimum": 0,
                    "type": "integer",
                },
            },
            "type": "object",
        },
    },
    "type": "object",
}
