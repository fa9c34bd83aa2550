// ResourceTable: filled in by its owner.
