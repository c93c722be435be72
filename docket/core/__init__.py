"""The bottom layer every docket folder may import; it imports nothing else of docket."""
