"""pyaten.dispatch"""
