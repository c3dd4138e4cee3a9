import { startApp } from '../shared/App.tsx';
import { portalApp } from './routes.tsx';

startApp(portalApp);
