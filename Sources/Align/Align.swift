// The Align stage.
