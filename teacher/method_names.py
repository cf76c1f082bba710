"""The labelling methods' names, in a leaf module: the config checks a name against them without importing the
methods (which import the config). `teacher.methods.METHODS` maps each to its function."""
METHOD_NAMES = ("direct", "one-step", "direct-re", "type-agents", "self-consistency", "soft-self-consistency",
                "crossagentie")
