"""data/adapters"""
