-- Install settings API (issue 15): a setting returns to its documented default by losing its
-- row (PUT /api/mssp/settings with the key set to null), so svc_app may delete from
-- install_settings. The table holds no history to lose: every change is audited as
-- settings.update with the values before and after.
GRANT DELETE ON install_settings TO svc_app;
