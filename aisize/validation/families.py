"""The families of validation cases: what ``aisize validate --family`` accepts (no other import)."""

FAMILIES = ("memory", "flops-time", "storage", "throughput", "training", "serving", "serving-load",
            "serving-specdec", "serving-disagg")
