"""Our experiments and runs in other tools' formats: Chaos Toolkit experiments and journals."""
