// The Verify stage.
